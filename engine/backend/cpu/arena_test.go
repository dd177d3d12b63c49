package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"hsdb/engine/backend"
)

func dataPtr(t backend.Tensor) uintptr { return uintptr(unsafe.Pointer(&host(t).Data[0])) }

// freedMode sets poisonFreed and reuseFreed for one test, whatever
// HSDB_CPU_POISON says.
func freedMode(t *testing.T, poison, reuse bool) {
	savedP, savedR := poisonFreed, reuseFreed
	poisonFreed, reuseFreed = poison, reuse
	t.Cleanup(func() { poisonFreed, reuseFreed = savedP, savedR })
}

// TestScopeReusesOutputs: after PopScope an output's buffer serves the next
// output of its size class; a kept output (or the tensor a kept view shows)
// keeps its values and is not handed out again; outside any scope nothing
// is reused.
func TestScopeReusesOutputs(t *testing.T) {
	freedMode(t, false, true)
	d := New(-1)
	x := wrap([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	d.PushScope() // step
	d.PushScope() // layer
	a := d.Scale(x, 2)
	b := d.Scale(x, 3)
	view := d.Reshape(b, 3, 2)
	d.PopScope(view)
	c := d.Scale(x, 4) // reuses a's buffer, never b's
	if dataPtr(c) != dataPtr(a) {
		t.Errorf("the closed scope's buffer was not reused")
	}
	if dataPtr(c) == dataPtr(b) {
		t.Fatalf("a kept output's buffer was handed out again")
	}
	near(t, "kept", f64(vals(b)), []float64{3, 6, 9, 12, 15, 18}, 0)
	d.PopScope()
	if d.ScopeDepth() != 0 {
		t.Fatalf("depth %d after closing both scopes", d.ScopeDepth())
	}
	e, f := d.Scale(x, 5), d.Scale(x, 6)
	if dataPtr(e) == dataPtr(f) || dataPtr(e) == dataPtr(c) || dataPtr(f) == dataPtr(c) {
		t.Fatalf("outputs made outside any scope share buffers")
	}
}

// TestFreeOutputOnce: Free of an op output lets the next output reuse its
// buffer; a second Free of it does nothing (two later outputs get two
// buffers).
func TestFreeOutputOnce(t *testing.T) {
	freedMode(t, false, true)
	d := New(-1)
	x := wrap([]float32{1, 2, 3, 4}, 1, 4)
	d.PushScope()
	defer d.PopScope()
	a := d.Scale(x, 2)
	p := dataPtr(a)
	d.Free(a)
	d.Free(a)
	b, c := d.Scale(x, 3), d.Scale(x, 4)
	if dataPtr(b) != p && dataPtr(c) != p {
		t.Errorf("the freed buffer was not reused")
	}
	if dataPtr(b) == dataPtr(c) {
		t.Fatalf("a double Free handed one buffer out twice")
	}
	near(t, "b", f64(vals(b)), []float64{3, 6, 9, 12}, 0)
	near(t, "c", f64(vals(c)), []float64{4, 8, 12, 16}, 0)
}

// TestUnwindScopes: UnwindScopes(1) closes every scope above the first.
func TestUnwindScopes(t *testing.T) {
	freedMode(t, false, true)
	d := New(-1)
	for range 4 {
		d.PushScope()
	}
	d.Scale(wrap([]float32{1}, 1, 1), 2)
	d.UnwindScopes(1)
	if d.ScopeDepth() != 1 {
		t.Fatalf("depth %d, want 1", d.ScopeDepth())
	}
	d.UnwindScopes(-3)
	if d.ScopeDepth() != 0 {
		t.Fatalf("depth %d, want 0", d.ScopeDepth())
	}
}

// TestOpsOverwriteReusedBuffers: every op gives the same bits in a scope,
// on buffers recycled full of NaN, as on fresh zeroed memory, so no op
// leaves an element of a reused buffer unwritten.
func TestOpsOverwriteReusedBuffers(t *testing.T) {
	freedMode(t, true, true)
	rng := rand.New(rand.NewPCG(17, 18))
	x, r := randT(rng, 3, 16), randT(rng, 3, 16)
	w, nw := randT(rng, 24, 16), randT(rng, 16)
	table := randT(rng, 5, 16)
	k, v := randT(rng, 8, 8), randT(rng, 8, 8)
	ops := func(d *Device) [][]float32 {
		nx, sum := d.AddRMSNorm(x, r, nw, 1e-5)
		q := d.RoPE(x, &backend.RoPEArgs{Heads: 2, HeadDim: 8, Pos: []int32{0, 3, 5}, InvFreq: []float32{1, 0.1, 0.01, 0.001}, MScale: 1})
		att := d.Attention(x, k, v, &backend.AttnArgs{Heads: 2, KVHeads: 1, DK: 8, DV: 8, Scale: 0.3, Base: []int32{0, 0, 0}, Pos: []int32{0, 4, 7}})
		out := [][]float32{
			vals(d.Linear(x, w, nil)), vals(nx), vals(sum), vals(d.RMSNorm(x, nw, 1e-5)),
			vals(d.Add(x, r)), vals(d.Scale(x, 3)), vals(d.SiluMul(x, r)), vals(q), vals(att),
			vals(d.Embedding(table, []int32{6, 11, 7}, 5)), vals(d.GatherRows(x, []int32{2, 0})),
			vals(d.ConcatCols(x, r)), vals(d.Alloc(3, 16)),
		}
		return out
	}
	want := ops(New(-1))
	d := New(-1)
	d.PushScope()
	for range 2 { // the second round runs on the first round's buffers
		d.PushScope()
		got := ops(d)
		for i := range want {
			for j := range want[i] {
				if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
					t.Fatalf("op %d element %d: %v in a scope, %v outside", i, j, got[i][j], want[i][j])
				}
			}
		}
		d.PopScope()
	}
	d.PopScope()
}

// TestRetainBound: closing a scope keeps at most retainMax bytes of
// buffers for reuse.
func TestRetainBound(t *testing.T) {
	freedMode(t, false, true)
	d := New(-1)
	d.PushScope()
	for range 2 * retainMax / (4 * recycleMax) {
		d.Alloc(1, recycleMax)
	}
	d.PopScope()
	if d.ar.freeBytes > retainMax {
		t.Fatalf("%d bytes kept, bound %d", d.ar.freeBytes, retainMax)
	}
	if d.ar.freeBytes == 0 {
		t.Fatal("nothing kept for reuse")
	}
}

// TestPoisonShowsStaleUse: as with HSDB_CPU_POISON=1, a tensor read after
// its scope closed shows NaN, and later outputs read right.
func TestPoisonShowsStaleUse(t *testing.T) {
	freedMode(t, true, false)
	d := New(-1)
	x := wrap([]float32{1, 2}, 1, 2)
	d.PushScope()
	stale := d.Scale(x, 2)
	d.PopScope()
	d.PushScope()
	defer d.PopScope()
	fresh := d.Scale(x, 3)
	for i, v := range vals(stale) {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("stale[%d] = %v, want NaN", i, v)
		}
	}
	near(t, "fresh", f64(vals(fresh)), []float64{3, 6}, 0)
}
