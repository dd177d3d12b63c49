//go:build cuda

package driver

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// driverAllocator is cuMemAlloc / cuMemFree in the current context.
type driverAllocator struct{}

func (driverAllocator) alloc(n int64) (Ptr, error) {
	return drv.memAlloc(n)
}

func (driverAllocator) free(p Ptr) error {
	return drv.memFree(p)
}

// Buffer is a device allocation from the device's caching pool.
type Buffer struct {
	d     *GPU
	ptr   Ptr
	size  int64
	class MemClass
	freed atomic.Bool
}

// Alloc returns a device buffer of n bytes (n >= 0; contents undefined)
// accounted to class. When the device cannot hold it even after releasing
// cached blocks it returns an *OOMError (errors.Is(err, ErrOutOfMemory))
// giving the request, the driver's free and total bytes and what hsdb holds
// per class. A zero-byte buffer has Ptr 0 and allocates nothing.
func (d *GPU) Alloc(n int64, class MemClass) (*Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: cuda:%d: allocating %d bytes", ErrBadArgument, d.ordinal, n)
	}
	b := &Buffer{d: d, size: n, class: class}
	if n == 0 {
		return b, nil
	}
	err := d.Do(func() error {
		p, _, err := d.pool.alloc(n, class)
		b.ptr = p
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Ptr returns the buffer's device address.
func (b *Buffer) Ptr() Ptr { return b.ptr }

// Size returns the bytes requested for the buffer.
func (b *Buffer) Size() int64 { return b.size }

// GPU returns the GPU the buffer lives on.
func (b *Buffer) GPU() *GPU { return b.d }

// Free returns the buffer to its device's pool (work already queued that
// uses it still completes first: the pool hands it out only to later work
// on the same stream). A second Free is a no-op.
func (b *Buffer) Free() error {
	if b == nil || b.freed.Swap(true) || b.ptr == 0 {
		return nil
	}
	return b.d.Do(func() error { return b.d.pool.put(b.ptr, b.class) })
}

// SetMemoryLimit caps the bytes the device's pool may hold (in use plus
// cached); 0 removes the cap. Allocations beyond it fail with an *OOMError
// as a real out-of-memory would, which lets a user keep room for another
// process and lets tests exercise the error.
func (d *GPU) SetMemoryLimit(bytes int64) error {
	return d.Do(func() error {
		d.pool.limit = bytes
		return nil
	})
}

// MemoryStats returns the pool's accounting.
func (d *GPU) MemoryStats() (MemoryStats, error) {
	var s MemoryStats
	err := d.Do(func() error {
		s = MemoryStats{InUse: d.pool.inUse, Peak: d.pool.peak, Cached: d.pool.cached, Limit: d.pool.limit}
		return nil
	})
	return s, err
}

// ResetPeak starts the peak accounting of MemoryStats afresh from what is
// in use now.
func (d *GPU) ResetPeak() error {
	return d.Do(func() error {
		d.pool.peak = d.pool.inUse
		return nil
	})
}

// TrimCache frees every cached (unused) block back to the driver.
func (d *GPU) TrimCache() error {
	return d.Do(func() error {
		if err := drv.streamSynchronize(d.st); err != nil {
			return err
		}
		return d.pool.release()
	})
}

// CopyToDevice copies len(src) bytes from host memory to dst. It returns
// once src may be reused (the driver has staged it); the copy is ordered on
// the device's stream before any later work.
func (d *GPU) CopyToDevice(dst Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.Do(func() error {
		return drv.copyHtoDAsync(dst, unsafe.Pointer(&src[0]), int64(len(src)), d.st)
	})
}

// pinnedCopyMax is the largest CopyToHost that goes through a cached
// pinned staging buffer (ReadSmall): the DMA engine then writes page-locked
// memory directly, where a pageable destination makes the driver stage the
// copy itself (the 1 MB of a DeepSeek-V3 prefill's last-token logits took
// 0.14 and 0.73 ms of stream time that way in two profiles). Larger copies
// (every token's logits, whole dumps) go to dst directly and keep no
// pinned memory.
const pinnedCopyMax = 4 << 20

// CopyToHost copies len(dst) bytes from src into host memory after all
// queued work, and returns when they have arrived. It returns the first
// asynchronous error of earlier work, if any.
func (d *GPU) CopyToHost(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	if len(dst) <= pinnedCopyMax {
		return d.ReadSmall(dst, src)
	}
	return d.Do(func() error {
		if err := drv.copyDtoHAsync(unsafe.Pointer(&dst[0]), src, int64(len(dst)), d.st); err != nil {
			return err
		}
		return drv.streamSynchronize(d.st)
	})
}

// CopyDevice copies n bytes from src to dst on the device, in stream order.
func (d *GPU) CopyDevice(dst, src Ptr, n int64) error {
	if n == 0 {
		return nil
	}
	return d.Do(func() error {
		return drv.copyDtoDAsync(dst, src, n, d.st)
	})
}

// Memset sets n bytes at dst to v, in stream order (0xff bytes are a NaN
// in f32, bf16 and f16: the tests poison outputs with it).
func (d *GPU) Memset(dst Ptr, v byte, n int64) error {
	if n == 0 {
		return nil
	}
	return d.Do(func() error {
		return drv.memsetD8Async(dst, v, n, d.st)
	})
}

// AllocBlock returns n > 0 bytes from the device's pool for class c, without
// a Buffer around them: the caller (a rank's scope bookkeeping) frees them
// with FreeBlock. It returns an *OOMError as Alloc does.
func (d *GPU) AllocBlock(n int64, c MemClass) (Ptr, error) {
	var p Ptr
	err := d.Do(func() error {
		var err error
		p, _, err = d.pool.alloc(n, c)
		return err
	})
	return p, err
}

// FreeBlock returns a block from AllocBlock (or Detach) to the pool,
// stream-ordered: queued work that still reads it completes first.
func (d *GPU) FreeBlock(p Ptr, c MemClass) error {
	return d.Do(func() error { return d.pool.put(p, c) })
}

// Detach hands the buffer's block to the caller, who frees it with
// FreeBlock: it returns the pointer and class and marks the buffer freed,
// or ok false when the buffer is nil, empty or already freed.
func (b *Buffer) Detach() (p Ptr, c MemClass, ok bool) {
	if b == nil || b.ptr == 0 || b.freed.Swap(true) {
		return 0, 0, false
	}
	return b.ptr, b.class, true
}
