//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// fakeQuantRef is fp8_act_fake_quant by its definition: per row and group
// of 128 columns bf16(f32(q)·s), q and s as actQuantRef computes them.
func fakeQuantRef(x []float32, rows, cols int) []float32 {
	q, s := actQuantRef(x, rows, cols)
	out := make([]float32, len(x))
	for i := range x {
		r, g := i/cols, (i%cols)/128
		out[i] = tensor.BF16ToF32(tensor.F32ToBF16(tensor.FP8E4M3ToF32(q[i]) * s[g*rows+r]))
	}
	return out
}

// TestFP8ActFakeQuantExact: fp8_act_fake_quant_bf16 writes
// bf16(f32(q)·s) for every element, bit for bit, out of place and in
// place, a zero group and a NaN included.
func TestFP8ActFakeQuantExact(t *testing.T) {
	p := newPair(t, tensor.BF16)
	g := p.g.g
	const T, cols = 29, 512
	x := w8a8Input(p, T, cols, true)
	want := fakeQuantRef(x, T, cols)
	xb := upload(t, g, x, tensor.BF16)
	out := poisoned(t, g, T*cols, tensor.BF16)
	if err := g.FP8ActFakeQuant(out.Ptr(), xb.Ptr(), T, cols); err != nil {
		t.Fatal(err)
	}
	if err := g.FP8ActFakeQuant(xb.Ptr(), xb.Ptr(), T, cols); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]float32{"out of place": download(t, g, out, T*cols, tensor.BF16), "in place": download(t, g, xb, T*cols, tensor.BF16)} {
		bad := 0
		for i := range want {
			same := math.Float32bits(b[i]) == math.Float32bits(want[i]) || (math.IsNaN(float64(b[i])) && math.IsNaN(float64(want[i])))
			if !same && bad < 5 {
				t.Errorf("%s: [%d, %d] = %g, want %g (x %g)", name, i/cols, i%cols, b[i], want[i], x[i])
				bad++
			}
		}
	}
	if !math.IsNaN(float64(want[2*cols+5])) || want[cols] != 0 {
		t.Fatalf("reference lost its NaN or zero group: %g, %g", want[2*cols+5], want[cols])
	}
}

// TestRankW8A8RoutedExperts: under SetW8A8, routed experts with fp8
// weights compute, per token and routed slot, down(fq(bf16(silu(gate(x')) ·
// up(x')))) with x' = fq(x), fq the fp8 rounding of fakeQuantRef and the
// weights dequantized, combined with the routing weights — the reference
// summed here in f64 — on the grouped kernels (silu·mul on the f32 sums)
// and on the cuBLAS path (gate and up stored in bf16 first). The
// values are chosen so that the gate and up sums are exact in f32 (x on
// the fp8 grid times a power of two, each group's largest 448·2^k, so fq
// keeps it; weights small integers in fp8 with scale 2^-6): the
// intermediate's fp8 rounding then sees the reference's values, and the
// result must match within bf16 rounding (1% of the largest output),
// where the experts without W8A8 (their intermediate not rounded) are
// off by more than ten times as much on average.
func TestRankW8A8RoutedExperts(t *testing.T) {
	oldMode := moeGEMMMode
	defer func() { moeGEMMMode = oldMode }()
	for _, mode := range []string{"", "cublas"} {
		moeGEMMMode = mode
		p := newPair(t, tensor.BF16)
		const T, H, I, E, K = 61, 256, 256, 8, 3
		a := backend.RouteArgs{Experts: E, TopK: K, Groups: 1, TopKGroup: 1, Sigmoid: true, NormTopK: true, Scale: 1.5}
		lg, _, _ := p.f32Logits(T, E, false)
		ids, w := p.g.Route(lg, &a)
		hid := hostIDs(p.g, ids)
		hw := p.g.ToHost(w, 0, T, 0, K).F32()
		xv := make([]float32, T*H)
		for i := range xv {
			k := math.Ldexp(1, (i/H)%5-2)
			xv[i] = float32(float64(p.rng.IntN(33)-16) * k)
			if i%128 == 0 {
				xv[i] = float32(448 * k)
			}
		}
		x := p.g.Upload(tensor.FromF32(append([]float32(nil), xv...), T, H).Convert(tensor.BF16))
		var gg, gu, gd []backend.Tensor
		var wg, wu, wd [][]float32
		for range E {
			for i, shape := range [][2]int{{I, H}, {I, H}, {H, I}} {
				q := smallIntFP8(p, shape[0], shape[1])
				dev, deq := p.g.UploadQuantized(q, tensor.Invalid), q.Dequantize().F32()
				switch i {
				case 0:
					gg, wg = append(gg, dev), append(wg, deq)
				case 1:
					gu, wu = append(gu, dev), append(wu, deq)
				default:
					gd, wd = append(gd, dev), append(wd, deq)
				}
			}
		}
		set := p.g.Experts(0, gg, gu, gd)
		plain := p.g.ToHost(p.g.RoutedExperts(x, ids, w, set), 0, T, 0, H).F32()
		if err := p.g.SetW8A8(true); err != nil {
			t.Fatal(err)
		}
		got := p.g.ToHost(p.g.RoutedExperts(x, ids, w, set), 0, T, 0, H).F32()

		xq := fakeQuantRef(xv, T, H)
		want := make([]float32, T*H)
		var big float64
		for tok := range T {
			xr := xq[tok*H : (tok+1)*H]
			y := make([]float64, H)
			for j := range K {
				e := hid[tok*K+j]
				act := make([]float32, I)
				for r := range I {
					var g, u float64
					for c := range H {
						g += float64(xr[c]) * float64(wg[e][r*H+c])
						u += float64(xr[c]) * float64(wu[e][r*H+c])
					}
					if mode == "cublas" { // the cuBLAS path stores gate and up in bf16 before SiluMul
						g = float64(tensor.BF16ToF32(tensor.F32ToBF16(float32(g))))
						u = float64(tensor.BF16ToF32(tensor.F32ToBF16(float32(u))))
					}
					act[r] = tensor.BF16ToF32(tensor.F32ToBF16(float32(g / (1 + math.Exp(-g)) * u)))
				}
				aq := fakeQuantRef(act, 1, I)
				for r := range H {
					var s float64
					for c := range I {
						s += float64(aq[c]) * float64(wd[e][r*I+c])
					}
					y[r] += float64(hw[tok*K+j]) * s
				}
			}
			for r := range H {
				want[tok*H+r] = float32(y[r])
				big = max(big, math.Abs(y[r]))
			}
		}
		name := fmt.Sprintf("w8a8 routed_experts (moeGEMMMode %q)", mode)
		if !(big > 0) {
			t.Fatalf("%s: reference all zero", name)
		}
		assertClose(t, name, got, want, 0.01*big, 0)
		var eGot, ePlain float64
		for i := range want {
			eGot += math.Abs(float64(got[i] - want[i]))
			ePlain += math.Abs(float64(plain[i] - want[i]))
		}
		if !(eGot < 0.1*ePlain) {
			t.Errorf("%s: mean error %g against the W8A8 reference, without W8A8 %g: want under a tenth", name, eGot/float64(len(want)), ePlain/float64(len(want)))
		}
	}
}

// smallIntFP8 returns a block-scaled fp8 weight [out, in] of integers from
// -4 to 4 (exact in float8_e4m3fn) with every scale 2^-6.
func smallIntFP8(p *pair, out, in int) *tensor.Quantized {
	data := tensor.New(tensor.F8E4M3, out, in)
	for i := range data.Data {
		data.Data[i] = tensor.F32ToFP8E4M3(float32(p.rng.IntN(9) - 4))
	}
	sr, sc := (out+127)/128, (in+127)/128
	sv := make([]float32, sr*sc)
	for i := range sv {
		sv[i] = 1.0 / 64
	}
	return &tensor.Quantized{Format: tensor.QuantFP8Block, Shape: [2]int{out, in}, Data: data, Scale: tensor.FromF32(sv, sr, sc), Block: [2]int{128, 128}}
}
