//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// These tests exercise the CUDA backend's host-side logic (scopes, memory
// accounting, argument checks, placement, the attention plan) on any
// machine: the Devices run over fakeMem instead of a GPU, so an op that
// passes its checks would fail with ErrNoDevice, and one that fails them
// must fail with ErrBadArgument before touching memory.

// fakeMem is a memory that hands out distinct addresses, records what is
// live and refuses a second free of the same block (so a test sees any
// double free the bookkeeping lets through).
type fakeMem struct {
	mu            sync.Mutex
	next          driver.Ptr
	live          map[driver.Ptr]int64
	limit         int64 // bytes; 0 = none
	used          int64
	allocs, frees int
	zeroed        map[driver.Ptr]bool
	copied        map[driver.Ptr][]byte
}

func newFakeMem() *fakeMem {
	return &fakeMem{next: 1 << 20, live: map[driver.Ptr]int64{}, zeroed: map[driver.Ptr]bool{}, copied: map[driver.Ptr][]byte{}}
}

func (f *fakeMem) alloc(n int64, c driver.MemClass) (driver.Ptr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limit > 0 && f.used+n > f.limit {
		return 0, &driver.OOMError{Requested: n, Class: c, Limit: f.limit}
	}
	p := f.next
	f.next += driver.Ptr(n+4095) &^ 4095
	f.live[p] = n
	f.used += n
	f.allocs++
	return p, nil
}

func (f *fakeMem) free(bs []block) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range bs {
		if b.ptr == 0 {
			continue
		}
		n, ok := f.live[b.ptr]
		if !ok {
			return fmt.Errorf("fake: double free of %#x", uint64(b.ptr))
		}
		delete(f.live, b.ptr)
		f.used -= n
		f.frees++
	}
	return nil
}

func (f *fakeMem) zero(p driver.Ptr, n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.zeroed[p] = true
	return nil
}

func (f *fakeMem) copyIn(p driver.Ptr, src []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.copied[p] = append([]byte(nil), src...)
	return nil
}

func (f *fakeMem) liveCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live)
}

func fakeDevice(f *fakeMem, act tensor.DType) *Device {
	return newDevice(nil, f, "cuda:fake", 0, act)
}

// isLive reports whether t's storage is still allocated in f.
func (f *fakeMem) isLive(t backend.Tensor) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.live[t.(*Tensor).ptr()]
	return ok
}

// panicOf runs f and returns its panic value (nil if none).
func panicOf(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// wantDeviceError fails unless f panics with a *backend.DeviceError for op
// whose error wraps target.
func wantDeviceError(t *testing.T, name, op string, target error, f func()) {
	t.Helper()
	p := panicOf(f)
	de, ok := p.(*backend.DeviceError)
	if !ok {
		t.Errorf("%s: panic %v (%T), want a *backend.DeviceError", name, p, p)
		return
	}
	if de.Op != op || !errors.Is(de, target) {
		t.Errorf("%s: DeviceError op %q err %v, want op %q wrapping %v", name, de.Op, de.Err, op, target)
	}
}

// TestScopes walks the forward pass's memory pattern (a step scope, a
// layer scope, PopScope keeping the layer's outputs, Free of the previous
// layer's, a double Free) and checks against the fake memory, the
// independent record, exactly which blocks are live after each step.
func TestScopes(t *testing.T) {
	f := newFakeMem()
	d := fakeDevice(f, tensor.BF16)
	w := d.Upload(tensor.New(tensor.BF16, 4, 8)) // 64 B, persistent
	kv := d.Zeros(tensor.BF16, 16, 8)            // 256 B, persistent
	if !f.zeroed[kv.(*Tensor).ptr()] || f.copied[w.(*Tensor).ptr()] == nil {
		t.Fatal("Zeros did not zero or Upload did not copy")
	}
	d.PushScope()          // step
	h0 := d.Alloc(3, 8)    // the embedding
	d.PushScope()          // layer 0
	tmp := d.Alloc(3, 16)  // an intermediate
	h1 := d.Alloc(3, 8)    // the layer's output
	d.PopScope(h1, nil, w) // keeping nil and a weight does nothing
	if f.isLive(tmp) || !f.isLive(h1) || !f.isLive(h0) {
		t.Fatalf("after the layer scope: tmp live %v, h1 live %v, h0 live %v", f.isLive(tmp), f.isLive(h1), f.isLive(h0))
	}
	d.Free(h0)
	d.Free(h0) // harmless
	d.Free(nil)
	if f.isLive(h0) {
		t.Fatal("Free left h0 allocated")
	}
	if got, want := d.MemoryInUse(), int64(64+256+3*8*2); got != want {
		t.Errorf("MemoryInUse %d, want %d (weights 64 + kv 256 + h1 48)", got, want)
	}
	if got := d.MemoryByClass(); got != [3]int64{64, 256, 48} {
		t.Errorf("MemoryByClass %v", got)
	}
	d.PopScope() // step: frees h1; h0 was already taken out of the scope
	if f.isLive(h1) || !f.isLive(w) || !f.isLive(kv) || f.liveCount() != 2 {
		t.Fatalf("after the step: %d live blocks, want the weight and the cache", f.liveCount())
	}
	d.PopScope() // no scope open: nothing happens
	if got := d.MemoryInUse(); got != 64+256 {
		t.Errorf("MemoryInUse after the step %d, want 320", got)
	}
	wantDeviceError(t, "use after free", "add", driver.ErrBadArgument, func() { d.Add(h1, h1) })
}

// TestPopScopeKeepOutermost: a tensor kept by the outermost scope becomes
// persistent (the logits handed back by a step), and Free releases it.
func TestPopScopeKeepOutermost(t *testing.T) {
	f := newFakeMem()
	d := fakeDevice(f, tensor.F32)
	d.PushScope()
	x := d.Alloc(2, 2)
	y := d.Alloc(2, 2)
	d.PopScope(x)
	if !f.isLive(x) || f.isLive(y) {
		t.Fatalf("x live %v (want true), y live %v (want false)", f.isLive(x), f.isLive(y))
	}
	d.PushScope()
	d.PopScope()
	if !f.isLive(x) {
		t.Fatal("a later scope freed a persistent tensor")
	}
	d.Free(x)
	if f.liveCount() != 0 || d.MemoryInUse() != 0 {
		t.Fatalf("%d live blocks, %d bytes in use after freeing everything", f.liveCount(), d.MemoryInUse())
	}
}

// TestUnwindScopes: a step that stops mid-layer leaves two scopes open;
// UnwindScopes back to the depth before the step frees both.
func TestUnwindScopes(t *testing.T) {
	f := newFakeMem()
	d := fakeDevice(f, tensor.F32)
	w := d.Upload(tensor.New(tensor.F32, 8))
	depth := d.ScopeDepth()
	d.PushScope()
	d.Alloc(4, 4)
	d.PushScope()
	d.Alloc(4, 4)
	d.UnwindScopes(depth)
	if d.ScopeDepth() != 0 || f.liveCount() != 1 || !f.isLive(w) {
		t.Fatalf("depth %d, %d live blocks after unwinding", d.ScopeDepth(), f.liveCount())
	}
}

// TestReshapeSharesStorage: a view and its base are one allocation;
// freeing either frees it once.
func TestReshapeSharesStorage(t *testing.T) {
	f := newFakeMem()
	d := fakeDevice(f, tensor.F32)
	d.PushScope()
	x := d.Alloc(4, 6)
	v := d.Reshape(x, 8, 3)
	if s := v.Shape(); !slices.Equal(s, []int{8, 3}) || v.DType() != tensor.F32 {
		t.Fatalf("view %v %s", s, v.DType())
	}
	d.Free(v)
	d.Free(x)
	if f.liveCount() != 0 || f.frees != 1 {
		t.Fatalf("%d live, %d frees; want 0 and 1", f.liveCount(), f.frees)
	}
	d.PopScope()
	wantDeviceError(t, "reshape count", "reshape", driver.ErrBadArgument, func() { d.Reshape(d.Zeros(tensor.F32, 4, 6), 5, 5) })
}

// TestOutOfMemory: an allocation the memory refuses panics with a
// DeviceError wrapping the *OOMError.
func TestOutOfMemory(t *testing.T) {
	f := newFakeMem()
	f.limit = 1000
	d := fakeDevice(f, tensor.F32)
	d.Upload(tensor.New(tensor.F32, 200)) // 800 B
	p := panicOf(func() { d.Alloc(100) })
	de, ok := p.(*backend.DeviceError)
	var oom *driver.OOMError
	if !ok || !errors.Is(de, driver.ErrOutOfMemory) || !errors.As(de, &oom) || oom.Requested != 400 || de.Op != "alloc" {
		t.Fatalf("panic %v, want a DeviceError from alloc wrapping an *OOMError for 400 bytes", p)
	}
	if d.MemoryInUse() != 800 {
		t.Errorf("a failed allocation changed the accounting: %d", d.MemoryInUse())
	}
}

// TestClose frees every tensor, persistent or scoped; ops then fail with
// ErrClosed and a second Close does nothing.
func TestClose(t *testing.T) {
	f := newFakeMem()
	d := fakeDevice(f, tensor.F32)
	x := d.Upload(tensor.New(tensor.F32, 4))
	d.PushScope()
	d.Alloc(4)
	if err := d.Close(); err != nil || f.liveCount() != 0 || d.MemoryInUse() != 0 {
		t.Fatalf("Close: %v, %d live blocks, %d bytes", err, f.liveCount(), d.MemoryInUse())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d.Free(x) // harmless
	wantDeviceError(t, "alloc after close", "alloc", driver.ErrClosed, func() { d.Alloc(4) })
}

// TestMemoryPerRank: two ranks over one memory account separately.
func TestMemoryPerRank(t *testing.T) {
	f := newFakeMem()
	a, b := newDevice(nil, f, "a", 0, tensor.F32), newDevice(nil, f, "b", 1, tensor.F32)
	a.Upload(tensor.New(tensor.F32, 10))
	b.Zeros(tensor.F32, 3)
	if a.MemoryInUse() != 40 || b.MemoryInUse() != 12 {
		t.Fatalf("rank a %d, rank b %d; want 40 and 12", a.MemoryInUse(), b.MemoryInUse())
	}
}

// TestArgumentChecks: every op refuses inconsistent arguments with
// ErrBadArgument, naming itself, before allocating anything.
func TestArgumentChecks(t *testing.T) {
	f := newFakeMem()
	d := fakeDevice(f, tensor.F32)
	x := d.Zeros(tensor.F32, 3, 8)
	w := d.Zeros(tensor.F32, 5, 7)
	i32 := d.Zeros(tensor.I32, 3, 8)
	kc, vc := d.Zeros(tensor.F32, 32, 8), d.Zeros(tensor.F32, 32, 8)
	q := d.Zeros(tensor.F32, 3, 16)
	w58, b4, n7, n8, xbf := d.Zeros(tensor.F32, 5, 8), d.Zeros(tensor.F32, 4), d.Zeros(tensor.F32, 7), d.Zeros(tensor.F32, 8), d.Zeros(tensor.BF16, 3, 8)
	attn := func(mut func(a *backend.AttnArgs)) func() {
		a := &backend.AttnArgs{Heads: 4, KVHeads: 2, DK: 4, DV: 4, Scale: 0.5, Base: []int32{0, 0, 16}, Pos: []int32{0, 1, 0}}
		mut(a)
		return func() { d.Attention(q, kc, vc, a) }
	}
	rope := &backend.RoPEArgs{Heads: 2, HeadDim: 4, Pos: []int32{0, 1, 2}, InvFreq: []float32{1, 0.1}, MScale: 1}
	cpuT := cpu.New(-1).Zeros(tensor.F32, 3, 8)
	cases := []struct {
		name, op string
		f        func()
	}{
		{"linear inner dims", "linear", func() { d.Linear(x, w, nil) }},
		{"linear bias", "linear", func() { d.Linear(x, w58, b4) }},
		{"linear int weight", "linear", func() { d.Linear(x, i32, nil) }},
		{"rmsnorm weight", "rmsnorm", func() { d.RMSNorm(x, n7, 1e-5) }},
		{"add_rmsnorm shapes", "add_rmsnorm", func() { d.AddRMSNorm(x, w, n8, 1e-5) }},
		{"add shapes", "add", func() { d.Add(x, w) }},
		{"add dtypes", "add", func() { d.Add(x, xbf) }},
		{"silu_mul shapes", "silu_mul", func() { d.SiluMul(x, w) }},
		{"rope heads", "rope", func() { d.RoPE(w, rope) }},
		{"rope frequencies", "rope", func() {
			d.RoPE(x, &backend.RoPEArgs{Heads: 2, HeadDim: 4, Pos: []int32{0, 1, 2}, InvFreq: []float32{1}})
		}},
		{"slice_cols range", "slice_cols", func() { d.SliceCols(x, 4, 9) }},
		{"concat_cols rows", "concat_cols", func() { d.ConcatCols(x, w) }},
		{"concat_cols none", "concat_cols", func() { d.ConcatCols() }},
		{"gather_rows index", "gather_rows", func() { d.GatherRows(x, []int32{0, 3}) }},
		{"gather_rows negative", "gather_rows", func() { d.GatherRows(x, []int32{-1}) }},
		{"scatter_add_rows index", "scatter_add_rows", func() { d.ScatterAddRows(x, x, []int32{0, 1, 3}, nil) }},
		{"scatter_add_rows weights", "scatter_add_rows", func() { d.ScatterAddRows(x, x, []int32{0, 1, 2}, []float32{1}) }},
		{"copy_rows past the end", "copy_rows", func() { d.CopyRows(kc, 30, x, 0, 3) }},
		{"copy_rows dtype", "copy_rows", func() { d.CopyRows(i32, 0, x, 0, 1) }},
		{"write_rows row", "write_rows", func() { d.WriteRows(kc, x, []int32{0, 1, 32}) }},
		{"write_rows count", "write_rows", func() { d.WriteRows(kc, x, []int32{0, 1}) }},
		{"to_host slice", "to_host", func() { d.ToHost(x, 0, 4, 0, 8) }},
		{"moments slice", "moments", func() { d.Moments(x, 0, 3, 2, 1) }},
		{"moments int", "moments", func() { d.Moments(i32, 0, 3, 0, 8) }},
		{"embedding int table", "embedding", func() { d.Embedding(i32, []int32{1}, 0) }},
		{"attention heads", "attention", attn(func(a *backend.AttnArgs) { a.KVHeads = 3 })},
		{"attention q width", "attention", attn(func(a *backend.AttnArgs) { a.DK = 2 })},
		{"attention positions", "attention", attn(func(a *backend.AttnArgs) { a.Pos = a.Pos[:2] })},
		{"attention cache row", "attention", attn(func(a *backend.AttnArgs) { a.Base[2] = 30; a.Pos[2] = 2 })},
		{"attention negative", "attention", attn(func(a *backend.AttnArgs) { a.Pos[0] = -1 })},
		{"foreign tensor", "add", func() { d.Add(cpuT, x) }},
		{"nil tensor", "add", func() { d.Add(nil, x) }},
	}
	before := f.allocs
	for _, c := range cases {
		wantDeviceError(t, c.name, c.op, driver.ErrBadArgument, c.f)
	}
	if f.allocs != before {
		t.Errorf("%d allocations by ops that failed their checks", f.allocs-before)
	}
	// Consistent arguments pass the checks and reach the (absent) GPU.
	wantDeviceError(t, "valid add", "add", driver.ErrNoDevice, func() { d.Add(x, x) })
	wantDeviceError(t, "valid attention", "attention", driver.ErrNoDevice, attn(func(*backend.AttnArgs) {}))
}

// TestPlan: where the ranks go for each machine shape.
func TestPlan(t *testing.T) {
	cases := []struct {
		world, gpus int
		force       bool
		want        placement
		err         string
	}{
		{1, 8, false, virtualRanks, ""},
		{8, 1, false, virtualRanks, ""},
		{4, 8, false, oneRankPerGPU, ""},
		{8, 8, false, oneRankPerGPU, ""},
		{4, 8, true, virtualRanks, ""},
		{16, 8, false, 0, "--tp 16 on 8 GPUs"},
		{0, 1, false, 0, "world size 0"},
	}
	for _, c := range cases {
		got, err := plan(c.world, c.gpus, c.force)
		if c.err != "" {
			if err == nil || !errors.Is(err, driver.ErrBadArgument) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("plan(%d, %d): %v, want an error naming %q", c.world, c.gpus, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("plan(%d, %d, %v) = %v, %v; want %v", c.world, c.gpus, c.force, got, err, c.want)
		}
	}
}

// TestSlotLayout: model.KVCache's rows (slot·capacity + position) are
// recovered as slots of the largest capacity dividing every base; a
// layout that is not slot-shaped is reported.
func TestSlotLayout(t *testing.T) {
	// Slots 0 and 2 of a 4-slot, 16-position cache: the gcd of 64, 0 and
	// 32 is 32, a capacity of 32 in which slot 2 is slot 1 of 2.
	slots, n, c, ok := slotLayout(64, []int32{0, 0, 32}, []int32{3, 4, 9})
	if !ok || n != 2 || c != 32 || !slices.Equal(slots, []int32{0, 0, 1}) {
		t.Errorf("got slots %v of %d × %d (ok %v)", slots, n, c, ok)
	}
	if _, n, c, ok := slotLayout(48, []int32{0, 0}, []int32{0, 1}); !ok || n != 1 || c != 48 {
		t.Errorf("one slot: %d × %d (ok %v)", n, c, ok)
	}
	// Packed sequences (bases 0 and 7): no capacity fits position 9.
	if _, _, _, ok := slotLayout(32, []int32{0, 7}, []int32{6, 9}); ok {
		t.Error("a packed layout was accepted")
	}
}

func TestAttnRuns(t *testing.T) {
	got := attnRuns([]int32{0, 0, 0, 64, 0, 0})
	want := []attnRun{{0, 3, 0}, {3, 1, 64}, {4, 2, 0}}
	if !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

func TestCopyUnit(t *testing.T) {
	for _, c := range []struct {
		vals []int64
		want int64
	}{{[]int64{4096, 64, 128}, 16}, {[]int64{4096, 8, 128}, 8}, {[]int64{4096, 12, 128}, 4}, {[]int64{4098, 64}, 2}, {[]int64{3, 64}, 1}} {
		if got := copyUnit(c.vals...); got != c.want {
			t.Errorf("copyUnit(%v) = %d, want %d", c.vals, got, c.want)
		}
	}
}

// TestUploadCache: equal arrays are uploaded once; a new array is added;
// beyond uploadSlots the least recently used is freed.
func TestUploadCache(t *testing.T) {
	f := newFakeMem()
	d := fakeDevice(f, tensor.F32)
	a, _ := d.uploadI32([]int32{1, 2, 3})
	a2, _ := d.uploadI32([]int32{1, 2, 3})
	b, _ := d.uploadI32([]int32{1, 2, 4})
	if a != a2 || a == b || f.allocs != 2 {
		t.Fatalf("a %#x a2 %#x b %#x after %d allocations", a, a2, b, f.allocs)
	}
	if got := f.copied[a]; len(got) != 12 || got[8] != 3 {
		t.Fatalf("uploaded bytes %v", got)
	}
	for i := range uploadSlots {
		d.uploadI32([]int32{int32(100 + i)})
		if i == 0 {
			d.uploadI32([]int32{1, 2, 3}) // a is used again: b is now older
		}
	}
	if f.liveCount() != uploadSlots {
		t.Errorf("%d arrays live, want %d", f.liveCount(), uploadSlots)
	}
	if _, live := f.live[b]; live {
		t.Error("the least recently used array was kept")
	}
	if _, live := f.live[a]; !live {
		t.Error("a recently used array was evicted")
	}
	d.Close()
	if f.liveCount() != 0 {
		t.Errorf("%d arrays live after Close", f.liveCount())
	}
}

// TestInProcessCommErrors: ranks handing all-reduce tensors of different
// shapes fail with ErrBadArgument on the rank that combines and
// backend.ErrAborted on the other, instead of hanging.
func TestInProcessCommErrors(t *testing.T) {
	f := newFakeMem()
	devs := []*Device{newDevice(nil, f, "r0", 0, tensor.F32), newDevice(nil, f, "r1", 1, tensor.F32)}
	g := backend.NewGroup(2)
	xs := []backend.Tensor{devs[0].Zeros(tensor.F32, 2, 4), devs[1].Zeros(tensor.F32, 2, 5)}
	panics := make([]any, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &Comm{dev: devs[r], rank: r, world: 2, group: g, devs: devs}
			panics[r] = panicOf(func() { c.AllReduceSum(xs[r]) })
		}()
	}
	wg.Wait()
	bad, aborted := 0, 0
	for _, p := range panics {
		err, _ := p.(error)
		switch {
		case errors.Is(err, driver.ErrBadArgument):
			bad++
		case errors.Is(err, backend.ErrAborted):
			aborted++
		}
	}
	if bad != 1 || aborted != 1 {
		t.Fatalf("panics %v: want one ErrBadArgument and one ErrAborted", panics)
	}
	one := &Comm{dev: devs[0], rank: 0, world: 1}
	if got := one.AllReduceSum(xs[0]); got != xs[0] {
		t.Error("a world of one did not return its input")
	}
}
