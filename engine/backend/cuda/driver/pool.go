//go:build cuda

package driver

import (
	"errors"
	"fmt"
	"sort"

	"hsdb/engine/bytesize"
)

// Ptr is a device address (CUdeviceptr). The zero Ptr is no memory.
type Ptr uint64

// Add returns p advanced by off bytes (a view into a buffer: row r of a
// [rows, cols] bf16 tensor starts at p.Add(r*cols*2)).
func (p Ptr) Add(off int64) Ptr { return Ptr(int64(p) + off) }

// MemClass says what an allocation holds, for the per-device accounting
// that an out-of-memory error reports.
type MemClass int

// The memory classes.
const (
	Weights     MemClass = iota // model parameters, loaded once
	KVCache                     // the attention KV cache
	Activations                 // per-forward tensors and scratch
	NumClasses                  // the number of classes (not a class): the length of per-class arrays
)

// String returns "weights", "kv" or "activations".
func (c MemClass) String() string {
	switch c {
	case Weights:
		return "weights"
	case KVCache:
		return "kv"
	case Activations:
		return "activations"
	}
	return fmt.Sprintf("memclass(%d)", int(c))
}

// allocator is the raw device allocator under the pool: cuMemAlloc and
// cuMemFree on the device (driverAllocator), a fake in tests.
type allocator interface {
	alloc(n int64) (Ptr, error)
	free(p Ptr) error
}

// isDriverOOM reports whether err is the driver's CUDA_ERROR_OUT_OF_MEMORY.
func isDriverOOM(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == cuErrOutOfMemory
}

// OOMError reports an allocation that did not fit, with the numbers a user
// needs to decide what to shrink. It wraps ErrOutOfMemory.
type OOMError struct {
	GPU       int
	Requested int64 // bytes asked for
	Class     MemClass
	Free      int64 // the driver's free bytes on the device (all processes)
	Total     int64 // the device's bytes
	InUse     [NumClasses]int64
	Cached    int64 // freed by hsdb and kept for reuse (already released before failing)
	Limit     int64 // SetMemoryLimit's cap, 0 if none
	Cause     error // the driver's error, nil when the limit refused
}

// Error formats the request, the driver's free and total bytes, what hsdb
// holds per class and the limit, e.g. "cuda:0: out of memory allocating
// 1.50 GiB for activations: 0.80 GiB free of 139.80 GiB; hsdb holds weights
// ...".
func (e *OOMError) Error() string {
	s := fmt.Sprintf("cuda:%d: out of memory allocating %s for %s: %s free of %s; hsdb holds weights %s, kv %s, activations %s, cached %s",
		e.GPU, bytesize.Binary(e.Requested), e.Class, bytesize.Binary(e.Free), bytesize.Binary(e.Total),
		bytesize.Binary(e.InUse[Weights]), bytesize.Binary(e.InUse[KVCache]), bytesize.Binary(e.InUse[Activations]), bytesize.Binary(e.Cached))
	if e.Limit > 0 {
		s += fmt.Sprintf("; limit %s", bytesize.Binary(e.Limit))
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns ErrOutOfMemory (and the driver's error, if any).
func (e *OOMError) Unwrap() []error {
	if e.Cause != nil {
		return []error{ErrOutOfMemory, e.Cause}
	}
	return []error{ErrOutOfMemory}
}

// pool is a caching allocator: freed blocks are kept in per-size buckets
// and handed out again for a request of the same bucket, so a forward pass
// that allocates the same activation shapes layer after layer calls
// cuMemAlloc only on its first layer. Memory is always plain device memory
// (cuMemAlloc), never managed memory. Not safe for concurrent use: the
// device thread owns it.
type pool struct {
	ordinal int
	a       allocator
	meminfo func() (free, total int64, err error)
	cache   map[int64][]Ptr // bucket size -> free blocks
	cached  int64
	inUse   [NumClasses]int64
	live    map[Ptr]int64 // allocated block -> bucket size
	limit   int64
	// peak is the most bytes in use at once, per class, since the pool was
	// made or ResetPeak.
	peak [NumClasses]int64
}

func newPool(ordinal int, a allocator, meminfo func() (int64, int64, error)) *pool {
	return &pool{ordinal: ordinal, a: a, meminfo: meminfo, cache: map[int64][]Ptr{}, live: map[Ptr]int64{}}
}

// bucket rounds a request up to the block size the pool allocates: the next
// power of two from 512 B up to 1 MiB, then a multiple of 2 MiB (so a large
// weight wastes at most 2 MiB and same-shaped activations still share a
// bucket).
func bucket(n int64) int64 {
	const small, big = 1 << 20, 2 << 20
	if n <= small {
		b := int64(512)
		for b < n {
			b <<= 1
		}
		return b
	}
	return (n + big - 1) / big * big
}

func (p *pool) total() int64 {
	var t int64
	for _, v := range p.inUse {
		t += v
	}
	return t + p.cached
}

// alloc returns a block of at least n bytes (n > 0) for class c. When the
// driver (or the limit) refuses, it releases the cache and tries once more,
// then returns an *OOMError.
func (p *pool) alloc(n int64, c MemClass) (Ptr, int64, error) {
	if c < 0 || c >= NumClasses {
		return 0, 0, fmt.Errorf("%w: memory class %d", ErrBadArgument, int(c))
	}
	b := bucket(n)
	if l := p.cache[b]; len(l) > 0 {
		ptr := l[len(l)-1]
		p.cache[b] = l[:len(l)-1]
		p.cached -= b
		p.inUse[c] += b
		p.peak[c] = max(p.peak[c], p.inUse[c])
		p.live[ptr] = b
		return ptr, b, nil
	}
	ptr, err := p.fresh(b)
	if err != nil && (isDriverOOM(err) || errors.Is(err, ErrOutOfMemory)) && p.cached > 0 {
		if rerr := p.release(); rerr != nil {
			return 0, 0, rerr
		}
		ptr, err = p.fresh(b)
	}
	if err != nil {
		if isDriverOOM(err) || errors.Is(err, ErrOutOfMemory) {
			e := &OOMError{GPU: p.ordinal, Requested: n, Class: c, InUse: p.inUse, Cached: p.cached, Limit: p.limit}
			if isDriverOOM(err) {
				e.Cause = err
			}
			e.Free, e.Total, _ = p.meminfo()
			return 0, 0, e
		}
		return 0, 0, fmt.Errorf("cuda:%d: allocating %s for %s: %w", p.ordinal, bytesize.Binary(n), c, err)
	}
	p.inUse[c] += b
	p.peak[c] = max(p.peak[c], p.inUse[c])
	p.live[ptr] = b
	return ptr, b, nil
}

// fresh asks the allocator for b bytes, honouring the limit.
func (p *pool) fresh(b int64) (Ptr, error) {
	if p.limit > 0 && p.total()+b > p.limit {
		return 0, ErrOutOfMemory
	}
	return p.a.alloc(b)
}

// put returns a block to the cache.
func (p *pool) put(ptr Ptr, c MemClass) error {
	b, ok := p.live[ptr]
	if !ok {
		return fmt.Errorf("%w: cuda:%d: freeing %#x, which the pool did not allocate or already freed", ErrBadArgument, p.ordinal, uint64(ptr))
	}
	delete(p.live, ptr)
	p.inUse[c] -= b
	p.cache[b] = append(p.cache[b], ptr)
	p.cached += b
	return nil
}

// release frees every cached block back to the driver.
func (p *pool) release() error {
	var first error
	sizes := make([]int64, 0, len(p.cache))
	for b := range p.cache {
		sizes = append(sizes, b)
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] > sizes[j] })
	for _, b := range sizes {
		for _, ptr := range p.cache[b] {
			if err := p.a.free(ptr); err != nil && first == nil {
				first = err
			}
			p.cached -= b
		}
		delete(p.cache, b)
	}
	return first
}

// releaseAll frees every block, cached or still in use (GPU.Close).
func (p *pool) releaseAll() error {
	first := p.release()
	for ptr := range p.live {
		if err := p.a.free(ptr); err != nil && first == nil {
			first = err
		}
		delete(p.live, ptr)
	}
	p.inUse = [NumClasses]int64{}
	return first
}

// MemoryStats is a device's allocation accounting in bytes (bucket sizes,
// so slightly above the bytes requested).
type MemoryStats struct {
	InUse  [NumClasses]int64 // indexed by MemClass
	Peak   [NumClasses]int64 // the most in use at once per class since ResetPeak
	Cached int64             // freed blocks kept for reuse
	Limit  int64             // SetMemoryLimit's cap, 0 if none
}
