//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/moeref"
	"hsdb/engine/tensor"
)

// f32Logits returns router logits [tokens, experts] in f32 on both
// devices: N(0, 1) values, or with coarse set, values on a grid of 1/4 so
// that many scores tie exactly (the tie rule: lower id first).
func (p *pair) f32Logits(tokens, experts int, coarse bool) (backend.Tensor, backend.Tensor, []float32) {
	v := randn(p.rng, tokens*experts, 1)
	if coarse {
		for i := range v {
			v[i] = float32(math.Round(float64(v[i])*4) / 4)
		}
	}
	return p.g.Upload(tensor.FromF32(slices.Clone(v), tokens, experts)), p.c.Upload(tensor.FromF32(slices.Clone(v), tokens, experts)), v
}

// hostIDs reads ids [tokens, k] I32 back as int32.
func hostIDs(d backend.Device, ids backend.Tensor) []int32 {
	s := ids.Shape()
	f := d.ToHost(ids, 0, s[0], 0, s[1]).F32()
	out := make([]int32, len(f))
	for i, x := range f {
		out[i] = int32(x)
	}
	return out
}

// routeCases are DeepSeek-V3's rule (256 experts, 8 groups, keep 4, top 8,
// bias, sigmoid, norm, scale 2.5), the same on tie-heavy logits, and
// DeepSeek-V2's (64 softmax experts, no groups, top 6, no norm).
func routeCases(rng func(n int) []float32) []backend.RouteArgs {
	bias := rng(256)
	for i := range bias {
		bias[i] *= 0.1
	}
	return []backend.RouteArgs{
		{Experts: 256, TopK: 8, Groups: 8, TopKGroup: 4, Sigmoid: true, Bias: bias, NormTopK: true, Scale: 2.5},
		{Experts: 64, TopK: 6, Groups: 1, TopKGroup: 1, Sigmoid: false, NormTopK: false, Scale: 1},
		{Experts: 16, TopK: 4, Groups: 4, TopKGroup: 2, Sigmoid: false, NormTopK: true, Scale: 1},
	}
}

// TestRankRouteMatchesReference: moe_route picks exactly the ids of the
// host reference (moeref.Route, itself checked against hand-derived HF
// routing in its package) and weights equal to float32 rounding, on
// random and on tie-heavy logits.
func TestRankRouteMatchesReference(t *testing.T) {
	p := newPair(t, tensor.BF16)
	for ci, a := range routeCases(func(n int) []float32 { return randn(p.rng, n, 1) }) {
		for _, coarse := range []bool{false, true} {
			name := fmt.Sprintf("route/case%d/E%d/coarse=%v", ci, a.Experts, coarse)
			const T = 333
			lg, _, lv := p.f32Logits(T, a.Experts, coarse)
			ids, w := p.g.Route(lg, &a)
			wantIDs, wantW := moeref.Route(&a, lv, T)
			if got := hostIDs(p.g, ids); !slices.Equal(got, wantIDs) {
				for i := range got {
					if got[i] != wantIDs[i] {
						t.Fatalf("%s: slot %d (token %d) id %d, reference %d", name, i, i/a.TopK, got[i], wantIDs[i])
					}
				}
				t.Fatalf("%s: %d ids, reference %d", name, len(got), len(wantIDs))
			}
			assertClose(t, name+"/weights", p.g.ToHost(w, 0, T, 0, a.TopK).F32(), wantW, 0, 1e-6)
		}
	}
}

// TestRankRoutedExpertsMatchCPU: the device MoE (permute, per-expert
// GEMMs, SiLU·mul, combine) against the CPU backend's expert-by-expert
// loop on identical expert ids, in f32 and bf16, on the cuBLAS path and
// on the grouped kernel (which takes bf16 only), with all experts local
// and with a rank's block of them (expert parallelism: other experts'
// slots add nothing). bf16 rounds the gate/up output, the activation and
// the expert outputs once each: three roundings of tolerance.
func TestRankRoutedExpertsMatchCPU(t *testing.T) {
	old := moeGEMMMode
	defer func() { moeGEMMMode = old }()
	for _, mode := range []string{"cublas", "kernel"} {
		moeGEMMMode = mode
		t.Run(mode, testRoutedExpertsMatchCPU)
	}
}

func testRoutedExpertsMatchCPU(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		const T, H, I, E = 77, 128, 64, 16
		a := backend.RouteArgs{Experts: E, TopK: 4, Groups: 4, TopKGroup: 2, Sigmoid: true, Bias: randn(p.rng, E, 0.1), NormTopK: true, Scale: 2.5}
		lg, lc, _ := p.f32Logits(T, E, false)
		ids, w := p.g.Route(lg, &a)
		idc, wc := p.c.Route(lc, &a)
		if g, c := hostIDs(p.g, ids), hostIDs(p.c, idc); !slices.Equal(g, c) {
			t.Fatalf("device ids %v, cpu %v", g[:16], c[:16])
		}
		x, xc := p.act(T, H, 1)
		for _, local := range [][2]int{{0, E}, {5, 11}} {
			var gg, gu, gd, cg, cu, cd []backend.Tensor
			for range local[1] - local[0] {
				g1, c1 := p.weight(tensor.BF16, 0.1, I, H)
				g2, c2 := p.weight(tensor.BF16, 0.1, I, H)
				g3, c3 := p.weight(tensor.BF16, 0.1, H, I)
				gg, gu, gd = append(gg, g1), append(gu, g2), append(gd, g3)
				cg, cu, cd = append(cg, c1), append(cu, c2), append(cd, c3)
			}
			set := p.g.Experts(local[0], gg, gu, gd)
			setc := p.c.Experts(local[0], cg, cu, cd)
			if !slices.Equal(set.Shape(), []int{local[1] - local[0], I, H}) {
				t.Errorf("expert set shape %v", set.Shape())
			}
			got := p.g.RoutedExperts(x, ids, w, set)
			want := p.c.RoutedExperts(xc, idc, wc, setc)
			at, rt := p.tols(1)
			if p.dt != tensor.F32 {
				at, rt = 3*at, 3*rt
			}
			name := fmt.Sprintf("routed_experts/%d-%d", local[0], local[1])
			assertClose(t, name, p.g.ToHost(got, 0, T, 0, H).F32(), p.c.ToHost(want, 0, T, 0, H).F32(), at, rt)
			if m := p.c.Moments(want, 0, T, 0, H); !(m.SumSq > 0) {
				t.Errorf("%s: the CPU reference is all zero", name)
			}
		}
	})
}

// TestRankMoEArgs: misshapen MoE inputs panic with a DeviceError naming
// the op instead of launching.
func TestRankMoEArgs(t *testing.T) {
	p := newPair(t, tensor.BF16)
	x, _ := p.act(4, 8, 1)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"route bf16 logits", func() { p.g.Route(x, &backend.RouteArgs{Experts: 8, TopK: 2, Scale: 1}) }},
		{"route top_k > experts", func() {
			lg, _, _ := p.f32Logits(4, 8, false)
			p.g.Route(lg, &backend.RouteArgs{Experts: 8, TopK: 9, Scale: 1})
		}},
		{"experts mismatched", func() {
			g, _ := p.weight(tensor.BF16, 1, 4, 8)
			d, _ := p.weight(tensor.BF16, 1, 4, 8)
			p.g.Experts(0, []backend.Tensor{g}, []backend.Tensor{g}, []backend.Tensor{d})
		}},
	} {
		func() {
			defer func() {
				if _, ok := recover().(*backend.DeviceError); !ok {
					t.Errorf("%s: no DeviceError panic", c.name)
				}
			}()
			c.f()
		}()
	}
}

// checkQuantizedExperts routes T tokens of random logits by a and compares
// the GPU's routed experts over quantized weights (quant makes one [rows,
// cols] weight: gate and up [I, H], down [H, I] per expert) with the CPU
// backend's expert loop over the same weights dequantized on upload, on
// identical expert ids: all a.Experts experts local, then a rank's block
// of them (2-7). Outside f32 the bound is 4 times p.tols(1): the
// dequantized weights are rounded to the activation dtype.
func (p *pair) checkQuantizedExperts(t *testing.T, prefix string, a *backend.RouteArgs, T, H, I int, quant func(rows, cols int) *tensor.Quantized) {
	t.Helper()
	lg, lc, _ := p.f32Logits(T, a.Experts, false)
	ids, w := p.g.Route(lg, a)
	idc, wc := p.c.Route(lc, a)
	x, xc := p.act(T, H, 1)
	for _, local := range [][2]int{{0, a.Experts}, {2, 7}} {
		var gg, gu, gd, cg, cu, cd []backend.Tensor
		for range local[1] - local[0] {
			for i, shape := range [][2]int{{I, H}, {I, H}, {H, I}} {
				q := quant(shape[0], shape[1])
				g, c := p.g.UploadQuantized(q, tensor.Invalid), p.c.UploadQuantized(q, tensor.Invalid)
				switch i {
				case 0:
					gg, cg = append(gg, g), append(cg, c)
				case 1:
					gu, cu = append(gu, g), append(cu, c)
				default:
					gd, cd = append(gd, g), append(cd, c)
				}
			}
		}
		got := p.g.RoutedExperts(x, ids, w, p.g.Experts(local[0], gg, gu, gd))
		want := p.c.RoutedExperts(xc, idc, wc, p.c.Experts(local[0], cg, cu, cd))
		at, rt := p.tols(1)
		if p.dt != tensor.F32 {
			at, rt = 4*at, 4*rt
		}
		name := fmt.Sprintf("%s/%d-%d", prefix, local[0], local[1])
		assertClose(t, name, p.g.ToHost(got, 0, T, 0, H).F32(), p.c.ToHost(want, 0, T, 0, H).F32(), at, rt)
		if m := p.c.Moments(want, 0, T, 0, H); !(m.SumSq > 0) {
			t.Errorf("%s: the CPU reference is all zero", name)
		}
	}
}
