//go:build cuda

package cuda

import (
	"bytes"
	"unsafe"

	"hsdb/engine/backend/cuda/driver"
)

// uploadSlots is how many recent host arrays a rank keeps on the device.
const uploadSlots = 16

// uploadCache keeps device copies of the small host arrays ops receive
// (token ids, positions, KV-cache rows, inverse frequencies, row indices):
// a forward step hands every decoder layer arrays with the same contents,
// so each is uploaded once a step instead of once a layer, and no layer
// waits on a host-to-device copy. Entries are matched by content, most
// recently used first. Used on the GPU thread inside a rank's ops.
type uploadCache struct {
	entries []*uploadEntry
	zeros   driver.Ptr // int32 zeros, zerosN of them
	zerosN  int
	// batch is the last attention TokenBatch, for batchSlots and
	// batchPos (see Device.tokenBatch).
	batch                *TokenBatch
	batchSlots, batchPos []int32
}

type uploadEntry struct {
	data []byte
	p    driver.Ptr
}

// upload returns a device copy of data (nil Ptr for no data), reusing one
// made earlier with the same bytes.
func (d *Device) upload(data []byte) (driver.Ptr, error) {
	if len(data) == 0 {
		return 0, nil
	}
	c := &d.uploads
	for i, e := range c.entries {
		if bytes.Equal(e.data, data) {
			copy(c.entries[1:i+1], c.entries[:i])
			c.entries[0] = e
			return e.p, nil
		}
	}
	p, err := d.mem.alloc(int64(len(data)), driver.Activations)
	if err != nil {
		return 0, err
	}
	if err := d.mem.copyIn(p, data); err != nil {
		d.mem.free([]block{{p, driver.Activations}})
		return 0, err
	}
	e := &uploadEntry{data: append([]byte(nil), data...), p: p}
	if len(c.entries) == uploadSlots {
		old := c.entries[uploadSlots-1]
		c.entries = c.entries[:uploadSlots-1]
		if err := d.mem.free([]block{{old.p, driver.Activations}}); err != nil {
			return 0, err
		}
	}
	c.entries = append([]*uploadEntry{e}, c.entries...)
	return p, nil
}

// uploadI32 is upload of an int32 array.
func (d *Device) uploadI32(v []int32) (driver.Ptr, error) {
	if len(v) == 0 {
		return 0, nil
	}
	return d.upload(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
}

// uploadF32 is upload of a float32 array.
func (d *Device) uploadF32(v []float32) (driver.Ptr, error) {
	if len(v) == 0 {
		return 0, nil
	}
	return d.upload(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
}

// zerosI32 returns a device array of at least n int32 zeros (the slot
// column of a row scatter through kv_cache_write).
func (d *Device) zerosI32(n int) (driver.Ptr, error) {
	c := &d.uploads
	if n <= c.zerosN {
		return c.zeros, nil
	}
	size := max(n, 2*c.zerosN, 1024)
	p, err := d.mem.alloc(int64(4*size), driver.Activations)
	if err != nil {
		return 0, err
	}
	if err := d.mem.zero(p, int64(4*size)); err != nil {
		d.mem.free([]block{{p, driver.Activations}})
		return 0, err
	}
	if c.zeros != 0 {
		if err := d.mem.free([]block{{c.zeros, driver.Activations}}); err != nil {
			return 0, err
		}
	}
	c.zeros, c.zerosN = p, size
	return p, nil
}

// drain empties the cache and returns its blocks to free.
func (c *uploadCache) drain() []block {
	var bs []block
	for _, e := range c.entries {
		bs = append(bs, block{e.p, driver.Activations})
	}
	if c.zeros != 0 {
		bs = append(bs, block{c.zeros, driver.Activations})
	}
	if c.batch != nil {
		for _, b := range []*driver.Buffer{c.batch.slot, c.batch.pos, c.batch.tiles} {
			if p, c, ok := b.Detach(); ok {
				bs = append(bs, block{p, c})
			}
		}
	}
	*c = uploadCache{}
	return bs
}
