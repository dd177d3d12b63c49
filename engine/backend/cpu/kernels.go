package cpu

import (
	"fmt"
	"math"

	"hsdb/engine/backend"
)

// The float32 inner loops every heavy op is built from. Each has a portable
// Go version (kernelsGo) and, on amd64 with AVX2 and FMA, an assembly one
// (kernels_amd64.s) chosen at start-up; see kernels_amd64.go. The assembly
// sums in eight lanes with fused multiply-adds, so it rounds differently
// from the Go loops (within the float32 dot-product error bound, which the
// tests check against float64), but a row's result depends only on that
// row's data and length, never on how many rows a call covers, so a token
// gives the same bits in a prefill batch as alone.

// dotRows sets y[r] = Σ_{c<len(x)} w[r·stride+c]·x[c] for every r <
// len(y): the product of len(y) rows of w, stride elements apart, with the
// vector x. Linear calls it with stride = in (rows of a [out, in] weight),
// attention with stride = the cache row width (one head's slice of each key
// row). It panics if w is too short.
func dotRows(y, w []float32, stride int, x []float32) {
	if len(y) == 0 {
		return
	}
	if need := (len(y)-1)*stride + len(x); stride < 0 || len(w) < need {
		panic(&backend.DeviceError{Device: "cpu", Op: "dot_rows", Err: fmt.Errorf("%d rows of %d with stride %d need %d weights, have %d", len(y), len(x), stride, need, len(w))})
	}
	if len(x) == 0 {
		clear(y)
		return
	}
	dotRowsKernel(y, w, stride, x)
}

// accumRows adds Σ_{r<len(p)} p[r]·w[r·stride : r·stride+len(y)] to y: a
// weighted sum of len(p) rows of w, stride elements apart (attention's
// probabilities times the value rows of one head). It panics if w is too
// short.
func accumRows(y, w []float32, stride int, p []float32) {
	if len(y) == 0 || len(p) == 0 {
		return
	}
	if need := (len(p)-1)*stride + len(y); stride < 0 || len(w) < need {
		panic(&backend.DeviceError{Device: "cpu", Op: "accum_rows", Err: fmt.Errorf("%d rows of %d with stride %d need %d values, have %d", len(p), len(y), stride, need, len(w))})
	}
	accumRowsKernel(y, w, stride, p)
}

// softmaxScaled replaces the scores s [keys] of one query head by
// softmax(scale·s) in place, as PyTorch's CPU softmax over the scaled
// scores: each scaled score is rounded to float32, the maximum m is
// subtracted, e^(x-m) is taken by expNeg (within 2 ulp), the terms are
// summed, and each is multiplied by the float32 reciprocal of the sum.
// PyTorch sums in float32 vector lanes; so does the assembly (eight lanes),
// the Go version sums in float64. A NaN score makes every output NaN, as in
// PyTorch.
func softmaxScaled(s []float32, scale float32) {
	if len(s) == 0 {
		return
	}
	softmaxKernel(s, scale)
}

// softmaxGo is softmaxScaled in portable Go.
func softmaxGo(s []float32, scale float32) {
	m := float32(math.Inf(-1))
	for i, v := range s {
		v *= scale
		s[i] = v
		if v > m {
			m = v
		}
	}
	var sum float64
	for i, v := range s {
		e := expNeg(v - m)
		s[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range s {
		s[i] *= inv
	}
}

// siluMul sets y[i] = silu(g[i])·u[i] with silu(x) = x/(1+e^-x), PyTorch's
// F.silu (vLLM SiluAndMul); len(g) and len(u) must be at least len(y). The
// assembly takes e^-|x| by expNeg's polynomial (so nothing overflows) and
// forms x/(1+e^-x) as x/(1+e) for x >= 0 and x·e/(1+e) for x < 0: within
// a few ulp of the float64 result. The Go version uses math.Exp in float64.
func siluMul(y, g, u []float32) {
	if len(y) == 0 {
		return
	}
	g, u = g[:len(y)], u[:len(y)]
	siluMulKernel(y, g, u)
}

// siluMulGo is siluMul in portable Go.
func siluMulGo(y, g, u []float32) {
	u = u[:len(g)]
	for i, v := range g {
		y[i] = v / (1 + float32(math.Exp(float64(-v)))) * u[i]
	}
}

// dotRowsGo is dotRows in portable Go: four rows at a time share the loads
// of x (dot4), the rest go one by one (dot), in the same order.
func dotRowsGo(y, w []float32, stride int, x []float32) {
	n := len(x)
	r := 0
	for ; r+4 <= len(y); r += 4 {
		o := r * stride
		y[r], y[r+1], y[r+2], y[r+3] = dot4(x, w[o:o+n], w[o+stride:o+stride+n], w[o+2*stride:o+2*stride+n], w[o+3*stride:o+3*stride+n])
	}
	for ; r < len(y); r++ {
		y[r] = dot(x, w[r*stride:r*stride+n])
	}
}

// accumRowsGo is accumRows in portable Go.
func accumRowsGo(y, w []float32, stride int, p []float32) {
	n := len(y)
	for r, pr := range p {
		row := w[r*stride : r*stride+n]
		for c, v := range row {
			y[c] += pr * v
		}
	}
}

// dot returns Σ a[i]·b[i] (len(b) >= len(a)) with two partial sums, even
// and odd elements (a last odd element goes to the even sum), added at the
// end: the order dot4 uses for each of its rows, so a row gives the same
// bits either way.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(a); i += 2 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1
}

// dot4 returns the dot products of x with four rows at once, loading x
// once; each row sums as dot does.
func dot4(x, w0, w1, w2, w3 []float32) (s0, s1, s2, s3 float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	var a0, a1, a2, a3 float32
	i := 0
	for ; i+2 <= n; i += 2 {
		x0, x1 := x[i], x[i+1]
		s0 += x0 * w0[i]
		a0 += x1 * w0[i+1]
		s1 += x0 * w1[i]
		a1 += x1 * w1[i+1]
		s2 += x0 * w2[i]
		a2 += x1 * w2[i+1]
		s3 += x0 * w3[i]
		a3 += x1 * w3[i+1]
	}
	for ; i < n; i++ {
		s0 += x[i] * w0[i]
		s1 += x[i] * w1[i]
		s2 += x[i] * w2[i]
		s3 += x[i] * w3[i]
	}
	return s0 + a0, s1 + a1, s2 + a2, s3 + a3
}
