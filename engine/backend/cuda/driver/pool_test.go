//go:build cuda

package driver

import (
	"errors"
	"strings"
	"testing"
)

// fakeAlloc hands out increasing addresses up to cap bytes, answering
// beyond that with the driver's CUDA_ERROR_OUT_OF_MEMORY.
type fakeAlloc struct {
	next, used, cap int64
	sizes           map[Ptr]int64
	allocs, frees   int
}

func (f *fakeAlloc) alloc(n int64) (Ptr, error) {
	if f.used+n > f.cap {
		return 0, &Error{Op: "cuMemAlloc", Code: cuErrOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"}
	}
	f.next += 1 << 30
	f.used += n
	f.sizes[Ptr(f.next)] = n
	f.allocs++
	return Ptr(f.next), nil
}

func (f *fakeAlloc) free(p Ptr) error {
	f.used -= f.sizes[p]
	delete(f.sizes, p)
	f.frees++
	return nil
}

func newFakePool(capacity int64) (*pool, *fakeAlloc) {
	f := &fakeAlloc{cap: capacity, sizes: map[Ptr]int64{}}
	return newPool(3, f, func() (int64, int64, error) { return capacity - f.used, capacity, nil }), f
}

// TestBucket checks the rounding rule by hand: powers of two from 512 B to
// 1 MiB, then 2 MiB multiples.
func TestBucket(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{
		{1, 512}, {512, 512}, {513, 1024}, {1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {5 << 20, 6 << 20}, {6 << 20, 6 << 20},
	} {
		if got := bucket(c.n); got != c.want {
			t.Errorf("bucket(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestPoolReuseAndAccounting(t *testing.T) {
	p, f := newFakePool(1 << 30)
	a, _, err := p.alloc(1000, Activations)
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := p.alloc(3<<20, Weights)
	if err != nil {
		t.Fatal(err)
	}
	if p.inUse[Activations] != 1024 || p.inUse[Weights] != 4<<20 {
		t.Fatalf("in use %v, want activations 1024 and weights 4 MiB", p.inUse)
	}
	if err := p.put(a, Activations); err != nil {
		t.Fatal(err)
	}
	if p.inUse[Activations] != 0 || p.cached != 1024 {
		t.Fatalf("after free: in use %v cached %d", p.inUse, p.cached)
	}
	b, _, err := p.alloc(900, KVCache) // same 1 KiB bucket: reused, no new driver call
	if err != nil {
		t.Fatal(err)
	}
	if b != a || f.allocs != 2 {
		t.Fatalf("reuse: got %#x (first %#x), %d driver allocations, want the cached block and 2", b, a, f.allocs)
	}
	if err := p.put(b, KVCache); err != nil {
		t.Fatal(err)
	}
	if err := p.put(b, KVCache); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("double free: %v, want ErrBadArgument", err)
	}
	_ = w
}

// TestPoolOOM: a request that does not fit fails with an *OOMError carrying
// the accounting; a request that fits once the cache is released succeeds.
func TestPoolOOM(t *testing.T) {
	p, f := newFakePool(8 << 20)
	w, _, err := p.alloc(4<<20, Weights)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := p.alloc(2<<20, Activations)
	if err != nil {
		t.Fatal(err)
	}
	p.put(a, Activations) // 2 MiB cached
	// 4 MiB does not fit beside 4 MiB weights + 2 MiB cached, but does once
	// the cache is released.
	if _, _, err := p.alloc(4<<20, Activations); err != nil {
		t.Fatalf("alloc after cache release: %v", err)
	}
	if f.frees != 1 || p.cached != 0 {
		t.Fatalf("cache not released: %d frees, %d cached", f.frees, p.cached)
	}
	_, _, err = p.alloc(1<<20+5, KVCache)
	var oom *OOMError
	if !errors.As(err, &oom) || !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("err = %v, want *OOMError wrapping ErrOutOfMemory", err)
	}
	if oom.Requested != 1<<20+5 || oom.InUse[Weights] != 4<<20 || oom.InUse[Activations] != 4<<20 || oom.Free != 0 || oom.Total != 8<<20 {
		t.Fatalf("oom fields %+v", oom)
	}
	msg := err.Error()
	for _, want := range []string{"cuda:3", "1 MiB for kv", "0 B free of 8 MiB", "weights 4 MiB", "activations 4 MiB", "CUDA_ERROR_OUT_OF_MEMORY"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	_ = w
}

func TestPoolLimit(t *testing.T) {
	p, _ := newFakePool(1 << 30)
	p.limit = 3 << 20
	if _, _, err := p.alloc(2<<20, Weights); err != nil {
		t.Fatal(err)
	}
	_, _, err := p.alloc(2<<20, Activations)
	var oom *OOMError
	if !errors.As(err, &oom) || oom.Limit != 3<<20 || oom.Cause != nil {
		t.Fatalf("err = %v, want an *OOMError from the 3 MiB limit", err)
	}
	if !strings.Contains(err.Error(), "limit 3 MiB") {
		t.Errorf("message %q lacks the limit", err)
	}
}

// TestPoolReleaseAll: closing a device frees live and cached blocks alike.
func TestPoolReleaseAll(t *testing.T) {
	p, f := newFakePool(1 << 30)
	a, _, _ := p.alloc(10, Activations)
	p.alloc(3<<20, Weights)
	p.put(a, Activations)
	if err := p.releaseAll(); err != nil {
		t.Fatal(err)
	}
	if f.used != 0 || len(f.sizes) != 0 || p.cached != 0 || p.inUse != [NumClasses]int64{} {
		t.Fatalf("after releaseAll: driver holds %d bytes, pool cached %d in use %v", f.used, p.cached, p.inUse)
	}
}
