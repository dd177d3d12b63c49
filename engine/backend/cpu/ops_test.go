package cpu

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

func randT(rng *rand.Rand, shape ...int) Tensor {
	v := make([]float32, tensor.Numel(shape))
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return wrap(v, shape...)
}

func vals(t backend.Tensor) []float32 { return host(t).ToF32() }

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestLinearAgainstFloat64: y = x·Wᵀ + b for f32 and bf16 weights against a
// float64 reference over the same (bf16-rounded) weights, with sizes that
// are not multiples of the 4-row micro-kernel.
func TestLinearAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d := New(-1)
	for _, dt := range []tensor.DType{tensor.F32, tensor.BF16, tensor.F16} {
		T, in, out := 37, 129, 203
		x, w, b := randT(rng, T, in), randT(rng, out, in), randT(rng, out)
		wd := Tensor{w.Tensor.Convert(dt)}
		y := vals(d.Linear(x, wd, b))
		wv := wd.ToF32()
		want := make([]float64, T*out)
		for i := range T {
			for o := range out {
				s := float64(b.F32()[o])
				for k := range in {
					s += float64(x.F32()[i*in+k]) * float64(wv[o*in+k])
				}
				want[i*out+o] = s
			}
		}
		near(t, "linear "+dt.String(), f64(y), want, 1e-4)
	}
}

// TestRMSNormByHand: x = [3, 4]: mean of squares 12.5, 1/sqrt(12.5) =
// 0.28284; with w = [1, 2]: [0.84853, 2.26274].
func TestRMSNormByHand(t *testing.T) {
	d := New(-1)
	y := vals(d.RMSNorm(wrap([]float32{3, 4}, 1, 2), wrap([]float32{1, 2}, 2), 0))
	near(t, "rmsnorm", f64(y), []float64{3 / math.Sqrt(12.5), 8 / math.Sqrt(12.5)}, 1e-6)
	yy, sum := d.AddRMSNorm(wrap([]float32{1, 1}, 1, 2), wrap([]float32{2, 3}, 1, 2), wrap([]float32{1, 2}, 2), 0)
	near(t, "add", f64(vals(sum)), []float64{3, 4}, 0)
	near(t, "addrmsnorm", f64(vals(yy)), f64(y), 1e-7)
}

// TestRoPEPairings: one head of 4 at position 1 with inv_freq [1, 0.5]:
// halves pairs (x0,x2) by angle 1 and (x1,x3) by 0.5; interleaved pairs
// (x0,x1) by 1 and (x2,x3) by 0.5.
func TestRoPEPairings(t *testing.T) {
	d := New(-1)
	x := wrap([]float32{1, 2, 3, 4}, 1, 4)
	c1, s1, c5, s5 := math.Cos(1), math.Sin(1), math.Cos(0.5), math.Sin(0.5)
	a := &backend.RoPEArgs{Heads: 1, HeadDim: 4, Pos: []int32{1}, InvFreq: []float32{1, 0.5}, MScale: 1}
	near(t, "halves", f64(vals(d.RoPE(x, a))), []float64{1*c1 - 3*s1, 2*c5 - 4*s5, 3*c1 + 1*s1, 4*c5 + 2*s5}, 1e-6)
	a.Interleaved = true
	near(t, "interleaved", f64(vals(d.RoPE(x, a))), []float64{1*c1 - 2*s1, 2*c1 + 1*s1, 3*c5 - 4*s5, 4*c5 + 3*s5}, 1e-6)
	a.Pos[0], a.MScale = 0, 2
	near(t, "mscale at position 0", f64(vals(d.RoPE(x, a))), []float64{2, 4, 6, 8}, 0)
}

// TestAttentionAgainstNaive: GQA attention over two sequences in a cache
// with gaps between slots, with and without a sliding window, against a
// float64 softmax written out directly.
func TestAttentionAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := New(-1)
	heads, kvh, dk, dv := 6, 2, 5, 3
	capN := 20
	k, v := randT(rng, 2*capN, kvh*dk), randT(rng, 2*capN, kvh*dv)
	// tokens: sequence in slot 1 at positions 0..6, then slot 0 at 3..4.
	var base, pos []int32
	for p := range 7 {
		base, pos = append(base, int32(capN)), append(pos, int32(p))
	}
	base, pos = append(base, 0, 0), append(pos, 3, 4)
	q := randT(rng, len(pos), heads*dk)
	for _, window := range []int{0, 3} {
		a := &backend.AttnArgs{Heads: heads, KVHeads: kvh, DK: dk, DV: dv, Scale: 0.37, Window: window, Base: base, Pos: pos}
		y := vals(d.Attention(q, k, v, a))
		var want []float64
		for tk := range pos {
			for h := range heads {
				kh := h / (heads / kvh)
				lo := 0
				if window > 0 {
					lo = max(0, int(pos[tk])-window+1)
				}
				var sc []float64
				mx := math.Inf(-1)
				for j := lo; j <= int(pos[tk]); j++ {
					s := 0.0
					for c := range dk {
						s += float64(q.F32()[tk*heads*dk+h*dk+c]) * float64(k.F32()[(int(base[tk])+j)*kvh*dk+kh*dk+c])
					}
					sc = append(sc, s*0.37)
					mx = math.Max(mx, s*0.37)
				}
				sum := 0.0
				for i := range sc {
					sc[i] = math.Exp(sc[i] - mx)
					sum += sc[i]
				}
				for c := range dv {
					o := 0.0
					for i, j := 0, lo; j <= int(pos[tk]); i, j = i+1, j+1 {
						o += sc[i] / sum * float64(v.F32()[(int(base[tk])+j)*kvh*dv+kh*dv+c])
					}
					want = append(want, o)
				}
			}
		}
		near(t, "attention", f64(y), want, 1e-5)
	}
}

// TestEmbeddingMasked: a vocab shard starting at id 4 of rows [40, 50, 60]
// gives zeros for ids outside [4, 7).
func TestEmbeddingMasked(t *testing.T) {
	d := New(-1)
	table := Tensor{tensor.FromF32([]float32{40, 41, 50, 51, 60, 61}, 3, 2).Convert(tensor.BF16)}
	y := vals(d.Embedding(table, []int32{5, 3, 6, 7, 4}, 4))
	near(t, "embedding", f64(y), []float64{50, 51, 0, 0, 60, 61, 0, 0, 40, 41}, 0)
}

// TestRowsOps: gather, weighted scatter-add, slicing and concatenation.
func TestRowsOps(t *testing.T) {
	d := New(-1)
	x := wrap([]float32{1, 2, 3, 4, 5, 6}, 3, 2)
	near(t, "gather", f64(vals(d.GatherRows(x, []int32{2, 0, 2}))), []float64{5, 6, 1, 2, 5, 6}, 0)
	dst := d.Alloc(3, 2)
	d.ScatterAddRows(dst, x, []int32{1, 1, 0}, []float32{1, 0.5, 2})
	near(t, "scatter", f64(vals(dst)), []float64{10, 12, 2.5, 4, 0, 0}, 0)
	near(t, "slice", f64(vals(d.SliceCols(x, 1, 2))), []float64{2, 4, 6}, 0)
	near(t, "concat", f64(vals(d.ConcatCols(d.SliceCols(x, 1, 2), d.SliceCols(x, 0, 1)))), []float64{2, 1, 4, 3, 6, 5}, 0)
	cache := d.Zeros(tensor.F32, 4, 2)
	d.WriteRows(cache, x, []int32{3, 0, 1})
	near(t, "write", f64(vals(cache)), []float64{3, 4, 5, 6, 0, 0, 1, 2}, 0)
}

// TestCommCollectives: three goroutine ranks all-reduce and all-gather.
func TestCommCollectives(t *testing.T) {
	comms := NewComms(backend.NewGroup(3))
	sums := make([][]float32, 3)
	gathers := make([][]float32, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := wrap([]float32{float32(r), float32(10 * r)}, 1, 2)
			sums[r] = vals(comms[r].AllReduceSum(x))
			gathers[r] = vals(comms[r].AllGatherCols(x))
		}()
	}
	wg.Wait()
	for r := range 3 {
		near(t, "all-reduce", f64(sums[r]), []float64{3, 30}, 0)
		near(t, "all-gather", f64(gathers[r]), []float64{0, 0, 1, 10, 2, 20}, 0)
	}
}

// TestMomentsSlice: Moments over columns 1:3 of a bf16 tensor: -2, 3, 5,
// -6 (sum 0, squares 74).
func TestMomentsSlice(t *testing.T) {
	d := New(-1)
	x := Tensor{tensor.FromF32([]float32{1, -2, 3, 4, 5, -6}, 2, 3).Convert(tensor.BF16)}
	m := d.Moments(x, 0, 2, 1, 3)
	if m.Count != 4 || m.Sum != 0 || m.SumSq != 74 || m.Min != -6 || m.Max != 5 || m.AbsMax != 6 {
		t.Fatalf("%+v", m)
	}
	h := d.ToHost(x, 1, 2, 0, 2)
	near(t, "tohost", f64(h.F32()), []float64{4, 5}, 0)
}

// BenchmarkLinear times a [64, 4096] × [4096, 4096]ᵀ product (a prefill
// chunk through one Llama-7B-sized projection): GFLOP/s.
func BenchmarkLinear(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	d := New(-1)
	x, w := randT(rng, 64, 4096), randT(rng, 4096, 4096)
	b.ResetTimer()
	for range b.N {
		d.Linear(x, w, nil)
	}
	b.ReportMetric(2*64*4096*4096*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// TestWrapShapes: wrap keeps the values and any number of dims, and a
// shape that does not match the values panics with a DeviceError.
func TestWrapShapes(t *testing.T) {
	v := []float32{1, 2, 3, 4}
	for _, shape := range [][]int{{4}, {2, 2}, {1, 2, 2}, {1, 2, 1, 2}} {
		w := wrap(v, shape...)
		if got := w.Shape(); len(got) != len(shape) || tensor.Numel(got) != 4 || got[len(got)-1] != shape[len(shape)-1] {
			t.Fatalf("wrap(%v): shape %v", shape, got)
		}
		near(t, "wrap", f64(w.F32()), f64(v), 0)
	}
	defer func() {
		if _, ok := recover().(*backend.DeviceError); !ok {
			t.Fatal("wrap of 4 values as [3] did not panic with a DeviceError")
		}
	}()
	wrap(v, 3)
}

// TestSplitMatchesInline: Linear and Attention give the same bits when their
// work is split over the worker pool (parallelMin forced to 1) as inline:
// every output element is computed by the same kernel calls either way.
func TestSplitMatchesInline(t *testing.T) {
	if workers < 2 {
		t.Skip("one worker: nothing is split")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	d := New(-1)
	x, w, b := randT(rng, 5, 67), randT(rng, 203, 67), randT(rng, 203)
	heads, kvh, dk := 4, 2, 8
	k, v := randT(rng, 40, kvh*dk), randT(rng, 40, kvh*dk)
	q := randT(rng, 3, heads*dk)
	a := &backend.AttnArgs{Heads: heads, KVHeads: kvh, DK: dk, DV: dk, Scale: 0.35, Base: []int32{0, 0, 20}, Pos: []int32{17, 18, 9}}
	run := func() ([]float32, []float32) { return vals(d.Linear(x, w, b)), vals(d.Attention(q, k, v, a)) }
	lin, att := run()
	saved := parallelMin
	parallelMin = 1
	defer func() { parallelMin = saved }()
	if !parallel(2, 1) {
		t.Fatal("parallelMin = 1 does not split")
	}
	lin2, att2 := run()
	for what, p := range map[string][2][]float32{"linear": {lin, lin2}, "attention": {att, att2}} {
		for i := range p[0] {
			if math.Float32bits(p[0][i]) != math.Float32bits(p[1][i]) {
				t.Fatalf("%s[%d]: inline %v, split %v", what, i, p[0][i], p[1][i])
			}
		}
	}
}

// TestRoPECacheFollowsArgs: one device rotating by positions A, then B of
// the same length, then A with another scale, then A again gives what a
// fresh device gives each time (the cache never serves stale angles).
func TestRoPECacheFollowsArgs(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	x := randT(rng, 2, 8)
	d := New(-1)
	for _, c := range []struct {
		pos    []int32
		mscale float32
	}{{[]int32{3, 4}, 1}, {[]int32{3, 5}, 1}, {[]int32{3, 4}, 1.5}, {[]int32{3, 4}, 1}} {
		a := &backend.RoPEArgs{Heads: 2, HeadDim: 4, Pos: c.pos, InvFreq: []float32{1, 0.01}, MScale: c.mscale}
		near(t, "rope", f64(vals(d.RoPE(x, a))), f64(vals(New(-1).RoPE(x, a))), 0)
	}
}
