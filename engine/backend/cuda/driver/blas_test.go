//go:build cuda

package driver

import (
	"math/rand/v2"
	"testing"

	"hsdb/engine/tensor"
)

// refLinear is y = x·wᵀ in float64.
func refLinear(x, w []float32, tokens, in, out int) []float32 {
	y := make([]float32, tokens*out)
	for t := range tokens {
		for o := range out {
			acc := 0.0
			for i := range in {
				acc += float64(x[t*in+i]) * float64(w[o*in+i])
			}
			y[t*out+o] = float32(acc)
		}
	}
	return y
}

func TestLinear(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(21, 22))
	tokens, in, out := 33, 257, 129 // odd sizes: no tile happens to fit
	for _, dt := range floatDTypes {
		for _, outDT := range []tensor.DType{dt, tensor.F32} {
			x := roundTo(randn(rng, tokens*in, 1), dt)
			w := roundTo(randn(rng, out*in, 0.1), dt)
			y := poisoned(t, d, tokens*out, outDT)
			if err := d.Linear(y.Ptr(), upload(t, d, x, dt).Ptr(), upload(t, d, w, dt).Ptr(), tokens, in, out, dt, outDT); err != nil {
				t.Fatal(err)
			}
			at, rt := tol(outDT)
			if outDT == tensor.F32 {
				at, rt = 1e-4, 1e-4 // f32 accumulation of 257 products
			}
			assertClose(t, "linear/"+dt.String()+"->"+outDT.String(), download(t, d, y, tokens*out, outDT), refLinear(x, w, tokens, in, out), at, rt)
		}
	}
	v, err := d.BLASVersion()
	t.Logf("cuBLAS %s version %d (err %v)", BLASLibrary(), v, err)
}

// TestMatMulBatchedTransposed: C[b] = A[b]ᵀ·B[b] with A stored [K, M], in a
// batch of 3, f32 (attention's q·kᵀ per head has this shape).
func TestMatMulBatchedTransposed(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(23, 24))
	batch, m, n, k := 3, 17, 9, 31
	a := randn(rng, batch*k*m, 1)
	b := randn(rng, batch*k*n, 1)
	c := poisoned(t, d, batch*m*n, tensor.F32)
	g := GEMM{M: m, N: n, K: k, TransA: true, Batch: batch, StrideA: int64(k * m), StrideB: int64(k * n), StrideC: int64(m * n), Alpha: 0.5, In: tensor.F32, Out: tensor.F32}
	if err := d.MatMul(g, c.Ptr(), upload(t, d, a, tensor.F32).Ptr(), upload(t, d, b, tensor.F32).Ptr()); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, batch*m*n)
	for bi := range batch {
		for i := range m {
			for j := range n {
				acc := 0.0
				for l := range k {
					acc += float64(a[bi*k*m+l*m+i]) * float64(b[bi*k*n+l*n+j])
				}
				want[bi*m*n+i*n+j] = float32(0.5 * acc)
			}
		}
	}
	assertClose(t, "matmul batched", download(t, d, c, batch*m*n, tensor.F32), want, 1e-5, 1e-5)
}
