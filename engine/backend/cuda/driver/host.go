//go:build cuda

package driver

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"hsdb/engine/bytesize"
)

// HostBuffer is page-locked (pinned) host memory from cuMemHostAlloc, the
// destination of asynchronous device-to-host copies: the DMA engine writes
// it directly while the host goes on queueing work.
type HostBuffer struct {
	d     *GPU
	p     unsafe.Pointer
	size  int64
	freed atomic.Bool
}

// AllocHost returns n bytes (n > 0) of pinned host memory, usable with
// CopyToHostAsync. Pinned memory is a scarce system resource: free it when
// done. Returns the driver's *Error on failure.
func (d *GPU) AllocHost(n int64) (*HostBuffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: cuda:%d: pinned buffer of %d bytes", ErrBadArgument, d.ordinal, n)
	}
	h := &HostBuffer{d: d, size: n}
	err := d.Do(func() error {
		var err error
		h.p, err = drv.memHostAlloc(n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: pinning %s of host memory: %w", d.ordinal, bytesize.Binary(n), err)
	}
	return h, nil
}

// Bytes returns the buffer's memory as a byte slice (valid until Free; its
// contents are defined only after the Event of a copy into it has been
// waited for).
func (h *HostBuffer) Bytes() []byte { return unsafe.Slice((*byte)(h.p), h.size) }

// Free releases the pinned memory; a second Free is a no-op.
func (h *HostBuffer) Free() error {
	if h == nil || h.freed.Swap(true) {
		return nil
	}
	return h.d.Do(func() error { return drv.memFreeHost(h.p) })
}

// Event marks a point in a device's stream; Wait blocks until the device
// has passed it.
type Event struct {
	d    *GPU
	e    cuEvent
	done atomic.Bool
}

// record creates and records an event (device thread only). timing
// selects an event that can be used with elapsed.
func (d *GPU) record(timing bool) (*Event, error) {
	ev := &Event{d: d}
	var err error
	if ev.e, err = drv.eventCreate(timing); err != nil {
		return nil, err
	}
	if err := drv.eventRecord(ev.e, d.st); err != nil {
		drv.eventDestroy(ev.e)
		return nil, err
	}
	return ev, nil
}

// Wait blocks until the device reached the event, then releases it. It
// returns the first asynchronous error of the work before it. A second Wait
// returns nil at once.
func (e *Event) Wait() error {
	if e.done.Swap(true) {
		return nil
	}
	return e.d.Do(func() error {
		err := drv.eventSynchronize(e.e)
		drv.eventDestroy(e.e)
		return err
	})
}

// CopyToHostAsync queues a copy of n bytes from src into dst at byte offset
// off, after all queued work, and returns at once; the bytes are in dst
// once the returned Event's Wait returns.
func (d *GPU) CopyToHostAsync(dst *HostBuffer, off int64, src Ptr, n int64) (*Event, error) {
	if off < 0 || n < 0 || off+n > dst.size {
		return nil, fmt.Errorf("%w: cuda:%d: copying %d bytes to offset %d of a %d-byte pinned buffer", ErrBadArgument, d.ordinal, n, off, dst.size)
	}
	var ev *Event
	err := d.Do(func() error {
		if n > 0 {
			if err := drv.copyDtoHAsync(unsafe.Add(dst.p, off), src, n, d.st); err != nil {
				return err
			}
		}
		var err error
		ev, err = d.record(false)
		return err
	})
	return ev, err
}

// Time runs f on the device thread between two timing events and returns
// the device time it queued, in milliseconds (cuEventElapsedTime, about
// 0.5 µs resolution). It waits for the work to finish.
func (d *GPU) Time(f func() error) (ms float64, err error) {
	err = d.Do(func() error {
		a, err := d.record(true)
		if err != nil {
			return err
		}
		defer drv.eventDestroy(a.e)
		if err := f(); err != nil {
			return err
		}
		b, err := d.record(true)
		if err != nil {
			return err
		}
		defer drv.eventDestroy(b.e)
		if err := drv.eventSynchronize(b.e); err != nil {
			return err
		}
		ms, err = drv.eventElapsed(a.e, b.e)
		return err
	})
	return ms, err
}

// pinnedCache keeps small pinned buffers for the device's own readbacks
// (statistics), since cuMemHostAlloc costs far more than a copy. GPU
// thread only.
type pinnedCache struct {
	free map[int64][]unsafe.Pointer
}

func (c *pinnedCache) get(n int64) (unsafe.Pointer, int64, error) {
	b := bucket(n)
	if l := c.free[b]; len(l) > 0 {
		p := l[len(l)-1]
		c.free[b] = l[:len(l)-1]
		return p, b, nil
	}
	p, err := drv.memHostAlloc(b)
	if err != nil {
		return nil, 0, err
	}
	return p, b, nil
}

func (c *pinnedCache) put(p unsafe.Pointer, b int64) {
	if c.free == nil {
		c.free = map[int64][]unsafe.Pointer{}
	}
	c.free[b] = append(c.free[b], p)
}

func (c *pinnedCache) release() {
	for _, l := range c.free {
		for _, p := range l {
			drv.memFreeHost(p)
		}
	}
	c.free = nil
}

// TouchPages writes a zero into every 4 KiB page of b, so that the pages of
// a freshly allocated destination (a prefill's logits: 2 MB that the Go
// heap may just have taken from the OS) are faulted in while the device is
// still busy, not after the stream is done, when the copy out of the
// staging buffer would take each fault on the critical path. Call it on
// memory whose contents do not matter yet (it overwrites bytes).
func TouchPages(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}

// ReadSmall copies len(dst) bytes from the device at src into dst through a
// cached pinned staging buffer and waits for the stream: the readback of a
// small device result (a statistics record) without a cuMemHostAlloc per
// call. Work queued before it on the stream completes first.
func (d *GPU) ReadSmall(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.ReadSmallWith(int64(len(dst)), src, func() { TouchPages(dst) }, func(host []byte) { copy(dst, host) })
}

// ReadSmallWith copies n > 0 bytes from the device at src into a cached
// pinned staging buffer after all queued work, runs during (if not nil)
// while the device finishes, waits for the stream, and hands the n staged
// bytes to use, which must not keep them: the buffer goes back to the
// cache when use returns. It is ReadSmall for a caller that converts the
// bytes on their way out (ToHost widening bf16 logits straight from the
// staging buffer into the result, so that only 2 bytes an element cross
// the bus and the host touches them once). Both functions run on the
// device's thread and must not call the GPU. It returns the first
// asynchronous error of earlier work, if any.
func (d *GPU) ReadSmallWith(n int64, src Ptr, during func(), use func(host []byte)) error {
	if n <= 0 {
		return fmt.Errorf("%w: cuda:%d: reading %d bytes", ErrBadArgument, d.ordinal, n)
	}
	return d.Do(func() error {
		host, hb, err := d.pinned.get(n)
		if err != nil {
			return err
		}
		defer d.pinned.put(host, hb)
		if err := drv.copyDtoHAsync(host, src, n, d.st); err != nil {
			return err
		}
		if during != nil {
			during()
		}
		if err := drv.streamSynchronize(d.st); err != nil {
			return err
		}
		use(unsafe.Slice((*byte)(host), n))
		return nil
	})
}
