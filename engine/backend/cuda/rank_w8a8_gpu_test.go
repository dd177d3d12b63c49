//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// actQuantRef is the W8A8 activation quantization derived by hand from its
// definition (vLLM's per_token_group_quant_fp8, DeepSeek-V3's act_quant):
// per token and group of 128 columns s = max(amax, 1e-10)/448 in f32, q =
// float8_e4m3fn(x/s) by tensor.F32ToFP8E4M3's nearest-code search after
// clamping to ±448. Returns q [T, cols] and s [cols/128, T].
func actQuantRef(x []float32, T, cols int) ([]byte, []float32) {
	q := make([]byte, T*cols)
	s := make([]float32, T*cols/128)
	for t := range T {
		for g := range cols / 128 {
			row := x[t*cols+g*128 : t*cols+g*128+128]
			var a float32
			for _, v := range row {
				if v == v {
					a = max(a, float32(math.Abs(float64(v))))
				}
			}
			sc := max(a, 1e-10) / 448
			s[g*T+t] = sc
			for j, v := range row {
				v /= sc
				if v == v {
					v = min(max(v, -448), 448)
				}
				q[t*cols+g*128+j] = tensor.F32ToFP8E4M3(v)
			}
		}
	}
	return q, s
}

// w8a8Input returns bf16-representable activations [T, cols]: N(0, 1)
// scaled by a factor per group from 2⁻⁶ to 2⁶ (so the scales differ),
// one group of token 1 all zero (the 1e-10 floor), one element NaN when
// nan is set.
func w8a8Input(p *pair, T, cols int, nan bool) []float32 {
	x := roundTo(randn(p.rng, T*cols, 1), tensor.BF16)
	for i := range x {
		t, g := i/cols, (i%cols)/128
		x[i] *= float32(math.Ldexp(1, (t+3*g)%13-6))
		if t == 1 && g == 0 {
			x[i] = 0
		}
	}
	if nan {
		x[2*cols+5] = float32(math.NaN())
	}
	return x
}

// TestFP8ActQuantExact: kernels/fp8.cu's fp8_act_quant writes every fp8
// byte and every scale exactly as the definition computed on the host, a
// zero group (scale 1e-10/448, bytes 0) and a NaN (its byte NaN, the
// group's scale from the other values) included.
func TestFP8ActQuantExact(t *testing.T) {
	p := newPair(t, tensor.BF16)
	g := p.g.g
	const T, cols = 37, 384
	x := w8a8Input(p, T, cols, true)
	xb := upload(t, g, x, tensor.BF16)
	q := poisoned(t, g, T*cols, tensor.I8)
	s := poisoned(t, g, T*cols/128, tensor.F32)
	if err := g.FP8ActQuant(q.Ptr(), s.Ptr(), xb.Ptr(), T, cols, T, tensor.BF16); err != nil {
		t.Fatal(err)
	}
	gotQ := make([]byte, T*cols)
	if err := g.CopyToHost(gotQ, q.Ptr()); err != nil {
		t.Fatal(err)
	}
	gotS := download(t, g, s, T*cols/128, tensor.F32)
	wantQ, wantS := actQuantRef(x, T, cols)
	bad := 0
	for i := range wantQ {
		if gotQ[i] != wantQ[i] && bad < 5 {
			t.Errorf("q[%d, %d] = %#02x, want %#02x (x %g, scale %g)", i/cols, i%cols, gotQ[i], wantQ[i], x[i], wantS[(i%cols/128)*T+i/cols])
			bad++
		}
	}
	for i := range wantS {
		if math.Float32bits(gotS[i]) != math.Float32bits(wantS[i]) {
			t.Errorf("scale [group %d, token %d] = %g, want %g", i/T, i%T, gotS[i], wantS[i])
		}
	}
	if wantS[0*T+1] != float32(1e-10)/448 || wantQ[1*cols] != 0 || wantQ[2*cols+5]&0x7f != 0x7f {
		t.Fatalf("reference lost its zero group or NaN: scale %g byte %#02x, NaN byte %#02x", wantS[1], wantQ[cols], wantQ[2*cols+5])
	}
	for _, c := range [][2]int{{200, T}, {cols, T - 1}} {
		if err := g.FP8ActQuant(q.Ptr(), s.Ptr(), xb.Ptr(), T, c[0], c[1], tensor.BF16); !errorsIsBadArgument(err) {
			t.Errorf("%d columns, scale stride %d: %v, want ErrBadArgument", c[0], c[1], err)
		}
	}
}

// TestRankW8A8Linear: with SetW8A8 a bf16 linear on a block-scaled fp8
// weight computes Σₖ (q_x·s_x)(q_w·s_w) — the activations quantized as
// actQuantRef, the weight's bytes and scales as stored — summed in f64 on
// the host, within one bf16 rounding of the output and f32 summation.
// Shapes: out not a multiple of 128 (a partial scale block row), in of 6
// blocks (scale rows padded to 8 for cuBLASLt) and of 4 (not padded);
// token counts that are multiples of 4 and others (padded to one: 37, 5,
// a decode step's 1).
// Without SetW8A8 the same call widens the weight (the CPU's numbers), so
// the two differ by the activations' quantization.
func TestRankW8A8Linear(t *testing.T) {
	p := newPair(t, tensor.BF16)
	for _, c := range []struct{ T, out, in int }{{37, 576, 768}, {64, 256, 512}, {5, 128, 256}, {1, 576, 768}, {40, 128, 256}} {
		name := fmt.Sprintf("w8a8/%dx%dx%d", c.T, c.out, c.in)
		wq := p.randFP8(c.out, c.in, 128, 128)
		w := p.g.UploadQuantized(wq, tensor.Invalid)
		xv := w8a8Input(p, c.T, c.in, false)
		x := p.g.Upload(tensor.FromF32(append([]float32(nil), xv...), c.T, c.in).Convert(tensor.BF16))
		if err := p.g.SetW8A8(true); err != nil {
			t.Fatal(err)
		}
		got := p.g.ToHost(p.g.Linear(x, w, nil), 0, c.T, 0, c.out).F32()
		if err := p.g.SetW8A8(false); err != nil {
			t.Fatal(err)
		}
		widened := p.g.ToHost(p.g.Linear(x, w, nil), 0, c.T, 0, c.out).F32()

		xq, xs := actQuantRef(xv, c.T, c.in)
		ws := wq.Scale.F32()
		kb := c.in / 128
		want := make([]float32, c.T*c.out)
		var atol float64
		for t := range c.T {
			for o := range c.out {
				var sum, abs float64
				for k := range c.in {
					v := float64(tensor.FP8E4M3ToF32(xq[t*c.in+k])) * float64(xs[(k/128)*c.T+t]) *
						float64(tensor.FP8E4M3ToF32(wq.Data.Data[o*c.in+k])) * float64(ws[(o/128)*kb+k/128])
					sum += v
					abs += math.Abs(v)
				}
				want[t*c.out+o] = float32(sum)
				atol = max(atol, abs*float64(c.in)*0x1p-24)
			}
		}
		assertClose(t, name, got, want, atol, 0x1p-8)
		var diff, norm float64
		for i := range want {
			diff += math.Abs(float64(got[i] - widened[i]))
			norm += math.Abs(float64(widened[i]))
		}
		if !(diff > 0 && diff < 0.1*norm) {
			t.Errorf("%s: W8A8 against widened weights: mean |diff| / mean |y| = %g, want in (0, 0.1): the activations' fp8 rounding", name, diff/norm)
		}
	}
}

// TestRankW8A8Fallbacks: SetW8A8 leaves the widening path to linears
// cuBLASLt's scaling cannot take (an input width not a multiple of 128,
// blocks other than 128×128, f32 activations): their results equal the
// widened weight's exactly.
func TestRankW8A8Fallbacks(t *testing.T) {
	for _, c := range []struct {
		dt              tensor.DType
		out, in, bh, bw int
	}{{tensor.BF16, 128, 200, 128, 128}, {tensor.BF16, 128, 256, 64, 128}, {tensor.F32, 128, 256, 128, 128}} {
		p := newPair(t, c.dt)
		name := fmt.Sprintf("%s/%dx%d/%dx%d", c.dt, c.out, c.in, c.bh, c.bw)
		w := p.g.UploadQuantized(p.randFP8(c.out, c.in, c.bh, c.bw), tensor.Invalid)
		x, _ := p.act(9, c.in, 1)
		want := p.g.ToHost(p.g.Linear(x, w, nil), 0, 9, 0, c.out).F32()
		if err := p.g.SetW8A8(true); err != nil {
			t.Fatal(err)
		}
		got := p.g.ToHost(p.g.Linear(x, w, nil), 0, 9, 0, c.out).F32()
		assertClose(t, name, got, want, 0, 0)
	}
}

// TestFP8BlockLinearArguments: sizes cuBLASLt cannot take are refused
// before any call.
func TestFP8BlockLinearArguments(t *testing.T) {
	g := gpu(t)
	none := func(int64) (driver.Ptr, func(), error) { return 0, nil, errors.New("no workspace") }
	for _, c := range [][3]int{{0, 128, 128}, {4, 100, 128}, {4, 128, 20}} {
		if err := g.FP8BlockLinear(0, 0, 0, 0, 0, c[0], c[1], c[2], none); !errorsIsBadArgument(err) {
			t.Errorf("tokens %d in %d out %d: %v, want ErrBadArgument", c[0], c[1], c[2], err)
		}
	}
}
