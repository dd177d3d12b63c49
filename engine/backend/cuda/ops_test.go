//go:build cuda

package cuda

import (
	"hsdb/engine/backend/cuda/driver"
	"math"
	"math/rand/v2"
	"testing"

	"hsdb/engine/tensor"
)

// refRMSNorm is RMSNorm in float64 (the definition in Zhang & Sennrich
// 2019), independent of the kernel's f32 block reduction.
func refRMSNorm(x, w []float32, rows, cols int, eps float64) []float32 {
	out := make([]float32, rows*cols)
	for r := range rows {
		ss := 0.0
		for c := range cols {
			v := float64(x[r*cols+c])
			ss += v * v
		}
		inv := 1 / math.Sqrt(ss/float64(cols)+eps)
		for c := range cols {
			out[r*cols+c] = float32(float64(x[r*cols+c]) * inv * float64(w[c]))
		}
	}
	return out
}

// TestRMSNorm: cols 1000 (not a multiple of the block size) takes the
// 16-byte path, 1001 the element path.
func TestRMSNorm(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ rows, cols int }{{37, 1000}, {5, 1001}} {
		testRMSNorm(t, d, rng, c.rows, c.cols)
	}
}

func testRMSNorm(t *testing.T, d *GPU, rng *rand.Rand, rows, cols int) {
	for _, dt := range floatDTypes {
		x := roundTo(randn(rng, rows*cols, 2), dt)
		w := roundTo(randn(rng, cols, 1), dt)
		xb, wb := upload(t, d, x, dt), upload(t, d, w, dt)
		out := poisoned(t, d, rows*cols, dt)
		if err := d.RMSNorm(out.Ptr(), xb.Ptr(), wb.Ptr(), rows, cols, 1e-6, dt); err != nil {
			t.Fatal(err)
		}
		at, rt := tol(dt)
		assertClose(t, dtName("rmsnorm", dt), download(t, d, out, rows*cols, dt), refRMSNorm(x, w, rows, cols, 1e-6), at, rt)
	}
}

// TestAddRMSNorm: cols 4096 takes the 16-byte path, 4100 the element path
// in bf16 and f16.
func TestAddRMSNorm(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ rows, cols int }{{19, 4096}, {3, 4100}} {
		testAddRMSNorm(t, d, rng, c.rows, c.cols)
	}
}

func testAddRMSNorm(t *testing.T, d *GPU, rng *rand.Rand, rows, cols int) {
	for _, dt := range floatDTypes {
		x := roundTo(randn(rng, rows*cols, 1), dt)
		res := roundTo(randn(rng, rows*cols, 3), dt)
		w := roundTo(randn(rng, cols, 1), dt)
		sum := make([]float32, len(x))
		for i := range x {
			sum[i] = x[i] + res[i]
		}
		sum = roundTo(sum, dt) // the kernel normalises the stored (rounded) residual, as vLLM
		xb, rb, wb := upload(t, d, x, dt), upload(t, d, res, dt), upload(t, d, w, dt)
		out := poisoned(t, d, rows*cols, dt)
		// In place on the residual, as vLLM's fused_add_rms_norm updates it.
		if err := d.AddRMSNorm(out.Ptr(), rb.Ptr(), xb.Ptr(), rb.Ptr(), wb.Ptr(), rows, cols, 1e-5, dt); err != nil {
			t.Fatal(err)
		}
		at, rt := tol(dt)
		assertClose(t, dtName("add_rmsnorm.residual", dt), download(t, d, rb, rows*cols, dt), sum, 0, 0)
		assertClose(t, dtName("add_rmsnorm.out", dt), download(t, d, out, rows*cols, dt), refRMSNorm(sum, w, rows, cols, 1e-5), at, rt)
	}
}

// TestEmbeddingVocabParallel: rank 1 of 3 holds ids [100, 200); ids outside
// give zero rows, ids inside copy the table row exactly.
func TestEmbeddingVocabParallel(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(5, 6))
	start, end, hidden := 100, 200, 300
	ids := []int32{150, 99, 100, 199, 200, 0, 123, 299}
	for _, dt := range floatDTypes {
		table := roundTo(randn(rng, (end-start)*hidden, 1), dt)
		tb, ib := upload(t, d, table, dt), uploadI32(t, d, ids)
		out := poisoned(t, d, len(ids)*hidden, dt)
		if err := d.Embedding(out.Ptr(), ib.Ptr(), tb.Ptr(), len(ids), hidden, start, end, dt); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(ids)*hidden)
		for i, id := range ids {
			if int(id) >= start && int(id) < end {
				copy(want[i*hidden:], table[(int(id)-start)*hidden:(int(id)-start+1)*hidden])
			}
		}
		assertClose(t, dtName("embedding", dt), download(t, d, out, len(want), dt), want, 0, 0)
	}
}

// TestSiluMulMergedGateUp: cols 704 takes the 16-byte path in every
// dtype, 700 in f32 only.
func TestSiluMulMergedGateUp(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, cols := range []int{700, 704} {
		testSiluMul(t, d, rng, 23, cols)
	}
}

func testSiluMul(t *testing.T, d *GPU, rng *rand.Rand, rows, cols int) {
	for _, dt := range floatDTypes {
		x := roundTo(randn(rng, rows*2*cols, 2), dt) // [rows, gate | up]
		xb := upload(t, d, x, dt)
		out := poisoned(t, d, rows*cols, dt)
		up := xb.Ptr().Add(int64(cols * dt.Size()))
		if err := d.SiluMul(out.Ptr(), xb.Ptr(), up, rows, cols, 2*cols, 2*cols, dt); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, rows*cols)
		for r := range rows {
			for c := range cols {
				g, u := float64(x[r*2*cols+c]), float64(x[r*2*cols+cols+c])
				want[r*cols+c] = float32(g / (1 + math.Exp(-g)) * u)
			}
		}
		at, rt := tol(dt)
		assertClose(t, dtName("silu_mul", dt), download(t, d, out, rows*cols, dt), want, at, rt)
	}
}

func TestAddScale(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(9, 10))
	n := 100003
	for _, dt := range floatDTypes {
		a, b := roundTo(randn(rng, n, 1), dt), roundTo(randn(rng, n, 1), dt)
		ab, bb := upload(t, d, a, dt), upload(t, d, b, dt)
		sum, sc := poisoned(t, d, n, dt), poisoned(t, d, n, dt)
		if err := d.Add(sum.Ptr(), ab.Ptr(), bb.Ptr(), int64(n), dt); err != nil {
			t.Fatal(err)
		}
		if err := d.Scale(sc.Ptr(), ab.Ptr(), -0.37, int64(n), dt); err != nil {
			t.Fatal(err)
		}
		ws, wc := make([]float32, n), make([]float32, n)
		for i := range a {
			ws[i] = a[i] + b[i]
			wc[i] = a[i] * -0.37
		}
		// One rounding of an exact f32 result: identical to the host's
		// round-to-nearest-even conversion of the same f32.
		assertClose(t, dtName("add", dt), download(t, d, sum, n, dt), roundTo(ws, dt), 0, 0)
		assertClose(t, dtName("scale", dt), download(t, d, sc, n, dt), roundTo(wc, dt), 0, 0)
	}
}

// TestCasts compares every cast bit for bit with engine/tensor's
// conversions (round to nearest even), on values that include ties,
// overflow to Inf in f16, subnormals and NaN.
func TestCasts(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(11, 12))
	v := randn(rng, 5000, 100)
	v = append(v, 1.00390625 /* bf16 tie */, 70000 /* f16 overflow */, 1e-6, -1e-7, float32(math.Inf(-1)), float32(math.NaN()), 3e-39 /* f32 subnormal */)
	for _, from := range floatDTypes {
		src := tensor.FromF32(append([]float32(nil), v...), len(v)).Convert(from)
		in := uploadBytes(t, d, src.Data)
		for _, to := range floatDTypes {
			out := poisoned(t, d, len(v), to)
			if err := d.Cast(out.Ptr(), in.Ptr(), int64(len(v)), from, to); err != nil {
				t.Fatal(err)
			}
			want := src.Convert(to)
			got := tensor.New(to, len(v))
			if err := d.CopyToHost(got.Data, out.Ptr()); err != nil {
				t.Fatal(err)
			}
			for i := range v {
				g, w := got.At(i), want.At(i)
				if g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
					t.Errorf("cast %s->%s of %v: got %v want %v", from, to, src.At(i), g, w)
					break
				}
			}
		}
	}
}

// TestFP8Dequant checks DeepSeek-V3 block dequantisation against
// tensor.FP8E4M3ToF32 times the block's scale, on a shape that is not a
// multiple of the block (the last block row and column are partial).
func TestFP8Dequant(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(13, 14))
	rows, cols, br, bc := 300, 200, 128, 128
	w := make([]byte, rows*cols)
	for i := range w {
		w[i] = byte(rng.IntN(256))
	}
	srows, scols := (rows+br-1)/br, (cols+bc-1)/bc
	scale := make([]float32, srows*scols)
	for i := range scale {
		scale[i] = float32(math.Ldexp(1+rng.Float64(), -rng.IntN(8)))
	}
	wb, sb := uploadBytes(t, d, w), upload(t, d, scale, tensor.F32)
	for _, to := range []tensor.DType{tensor.F32, tensor.BF16} {
		out := poisoned(t, d, rows*cols, to)
		if err := d.FP8Dequant(out.Ptr(), wb.Ptr(), sb.Ptr(), rows, cols, br, bc, to); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, rows*cols)
		for r := range rows {
			for c := range cols {
				want[r*cols+c] = tensor.FP8E4M3ToF32(w[r*cols+c]) * scale[(r/br)*scols+c/bc]
			}
		}
		// Random bytes include e4m3's NaNs 0x7f and 0xff: the kernel must
		// keep them NaN (FP8E4M3ToF32 gives NaN there).
		assertCloseNaN(t, dtName("fp8_dequant", to), download(t, d, out, rows*cols, to), roundTo(want, to), 0, 0)
	}
}

// TestMoEDispatchCombine gathers rows per expert and combines them back
// with weights; the reference is the scatter-add written directly.
func TestMoEDispatchCombine(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(15, 16))
	tokens, topk, cols, experts := 40, 3, 96, 5
	for _, dt := range floatDTypes {
		x := roundTo(randn(rng, tokens*cols, 1), dt)
		// Route: token t's k-th expert; group rows by expert as the host does.
		route := make([]int, tokens*topk)
		weight := make([]float32, tokens*topk)
		for i := range route {
			route[i] = rng.IntN(experts)
			weight[i] = float32(rng.Float64())
		}
		var idx []int32
		rowOf := make([]int32, tokens*topk)
		for e := range experts {
			for i, r := range route {
				if r == e {
					rowOf[i] = int32(len(idx))
					idx = append(idx, int32(i/topk))
				}
			}
		}
		rowOf[5] = -1 // an expert on another rank: skipped
		xb, ib := upload(t, d, x, dt), uploadI32(t, d, idx)
		disp := poisoned(t, d, len(idx)*cols, dt)
		if err := d.GatherRows(disp.Ptr(), xb.Ptr(), ib.Ptr(), len(idx), cols, tokens, dt); err != nil {
			t.Fatal(err)
		}
		wantDisp := make([]float32, len(idx)*cols)
		for i, src := range idx {
			copy(wantDisp[i*cols:(i+1)*cols], x[int(src)*cols:])
		}
		assertClose(t, dtName("gather_rows", dt), download(t, d, disp, len(idx)*cols, dt), wantDisp, 0, 0)

		// Combine into an existing output (accumulate), as a shared expert's
		// result is added.
		base := roundTo(randn(rng, tokens*cols, 1), dt)
		out := upload(t, d, base, dt)
		rb, wb := uploadI32(t, d, rowOf), upload(t, d, weight, tensor.F32)
		if err := d.MoECombine(out.Ptr(), disp.Ptr(), rb.Ptr(), wb.Ptr(), tokens, topk, cols, len(idx), true, dt); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, tokens*cols)
		for tk := range tokens {
			for c := range cols {
				acc := float64(base[tk*cols+c])
				for k := range topk {
					i := tk*topk + k
					if rowOf[i] >= 0 {
						acc += float64(weight[i]) * float64(wantDisp[int(rowOf[i])*cols+c])
					}
				}
				want[tk*cols+c] = float32(acc)
			}
		}
		at, rt := tol(dt)
		assertClose(t, dtName("moe_combine", dt), download(t, d, out, tokens*cols, dt), want, at, rt)
	}
}

// refRoPE rotates pairs in float64 from the f32 angle pos·inv_freq, as the
// kernel (and HF) form it.
func refRoPE(x []float32, pos []int32, invFreq []float32, p RoPEParams) []float32 {
	out := append([]float32(nil), x...)
	half := p.RotDim / 2
	for t := range p.Tokens {
		for h := range p.Heads {
			o := t*p.RowStride + h*p.HeadStride + p.RotOffset
			for i := range half {
				ia, ib := o+i, o+i+half
				if p.Interleaved {
					ia, ib = o+2*i, o+2*i+1
				}
				f := float64(float32(pos[t]) * invFreq[i])
				s, c := math.Sincos(f)
				c *= float64(p.MScale)
				s *= float64(p.MScale)
				a, b := float64(x[ia]), float64(x[ib])
				out[ia] = float32(a*c - b*s)
				out[ib] = float32(b*c + a*s)
			}
		}
	}
	return out
}

func TestRoPE(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(17, 18))
	cases := []struct {
		name string
		p    RoPEParams
	}{
		// Llama: full rotary head of 64, NeoX halves.
		{"llama-halves", RoPEParams{Tokens: 9, Heads: 4, RowStride: 4 * 64, HeadStride: 64, RotDim: 64, MScale: 1}},
		// llama2.c: interleaved pairs.
		{"llama2c-interleaved", RoPEParams{Tokens: 9, Heads: 3, RowStride: 3 * 48, HeadStride: 48, RotDim: 48, Interleaved: true, MScale: 1}},
		// DeepSeek MLA q: head 192, rotary part 64 at offset 128, YaRN mscale,
		// rows with padding after the heads.
		{"mla-yarn", RoPEParams{Tokens: 7, Heads: 2, RowStride: 2*192 + 8, HeadStride: 192, RotOffset: 128, RotDim: 64, Interleaved: true, MScale: 1.3}},
	}
	for _, c := range cases {
		for _, dt := range floatDTypes {
			p := c.p
			x := roundTo(randn(rng, p.Tokens*p.RowStride, 1), dt)
			pos := make([]int32, p.Tokens)
			for i := range pos {
				pos[i] = int32(rng.IntN(100000)) // large positions test the f32 angle and its range reduction
			}
			invFreq := make([]float32, p.RotDim/2)
			for i := range invFreq {
				invFreq[i] = float32(math.Pow(10000, -2*float64(i)/float64(p.RotDim)))
			}
			xb, pb, fb := upload(t, d, x, dt), uploadI32(t, d, pos), upload(t, d, invFreq, tensor.F32)
			if err := d.RoPE(xb.Ptr(), pb.Ptr(), fb.Ptr(), p, dt); err != nil {
				t.Fatal(err)
			}
			at, rt := tol(dt)
			if dt == tensor.F32 {
				at, rt = 2e-5, 2e-5
			}
			assertClose(t, c.name+"/"+dt.String(), download(t, d, xb, len(x), dt), refRoPE(x, pos, invFreq, p), at, rt)
		}
	}
}

// TestBadArguments: wrong shapes and dtypes return ErrBadArgument before
// anything is launched.
func TestBadArguments(t *testing.T) {
	d := gpu(t)
	checks := map[string]error{
		"rmsnorm i64":    d.RMSNorm(0, 0, 0, 1, 1, 1e-6, tensor.I64),
		"rope odd dim":   d.RoPE(0, 0, 0, RoPEParams{Tokens: 1, Heads: 1, RowStride: 8, HeadStride: 8, RotDim: 7, MScale: 1}, tensor.F32),
		"fp8 to f16":     d.FP8Dequant(0, 0, 0, 1, 1, 128, 128, tensor.F16),
		"silu stride":    d.SiluMul(0, 0, 0, 1, 10, 5, 10, tensor.F32),
		"matmul k=0":     d.MatMul(driver.GEMM{M: 1, N: 1, K: 0, In: tensor.F32, Out: tensor.F32}, 0, 0, 0),
		"matmul out f16": d.MatMul(driver.GEMM{M: 1, N: 1, K: 1, In: tensor.BF16, Out: tensor.F16}, 0, 0, 0),
	}
	for name, err := range checks {
		if !errorsIsBadArgument(err) {
			t.Errorf("%s: err = %v, want ErrBadArgument", name, err)
		}
	}
	if _, err := d.NewTokenBatch([]int32{0, 2}, []int32{0, 0}, 2, 8); !errorsIsBadArgument(err) {
		t.Errorf("slot out of range: err = %v, want ErrBadArgument", err)
	}
	if _, err := d.NewTokenBatch([]int32{0}, []int32{8}, 1, 8); !errorsIsBadArgument(err) {
		t.Errorf("position at capacity: err = %v, want ErrBadArgument", err)
	}
}
