package cpu

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// Linear computes y = x·Wᵀ + b: x [tokens, in] f32, w [out, in] f32/bf16/f16
// (nn.Linear's layout), b [out] or nil. Out: [tokens, out] f32.
//
// Work is split over output features; each worker widens a block of weight
// rows to float32 once and reuses it for a block of tokens, so bf16 weights
// cost one conversion per row per 32 tokens.
func (d *Device) Linear(x, w, b backend.Tensor) backend.Tensor {
	xt, wt := host(x), host(w)
	T, in := xt.Rows(), xt.Cols()
	out, win := wt.Rows(), wt.Cols()
	if win != in {
		panic(&backend.DeviceError{Device: d.name, Op: "linear", Err: fmt.Errorf("x %v and weight %v: inner dims %d != %d", xt.Shape, wt.Shape, in, win)})
	}
	xv := f32(x)
	y := make([]float32, T*out)
	var bias []float32
	if b != nil {
		bt := host(b)
		if bt.Numel() != out {
			panic(&backend.DeviceError{Device: d.name, Op: "linear", Err: fmt.Errorf("bias %v for %d outputs", bt.Shape, out)})
		}
		bias = bt.ToF32()
	}
	const ob = 4 // weight rows per micro-kernel
	blocks := (out + ob - 1) / ob
	parallelFor(blocks, T*out*in, func(lo, hi int) {
		var scratch []float32
		for blk := lo; blk < hi; blk++ {
			o0 := blk * ob
			o1 := min(o0+ob, out)
			wrows := weightRows(wt, o0, o1, &scratch)
			linearBlock(y, xv, wrows, T, in, out, o0, o1)
		}
	})
	if bias != nil {
		for t := range T {
			row := y[t*out : (t+1)*out]
			for o, bv := range bias {
				row[o] += bv
			}
		}
	}
	return wrap(y, T, out)
}

// weightRows returns rows [o0,o1) of w as float32: a view for F32 weights, or
// the rows widened into *scratch.
func weightRows(w *tensor.Tensor, o0, o1 int, scratch *[]float32) []float32 {
	in := w.Cols()
	if w.DType == tensor.F32 {
		return w.F32()[o0*in : o1*in]
	}
	n := (o1 - o0) * in
	if cap(*scratch) < n {
		*scratch = make([]float32, n)
	}
	s := (*scratch)[:n]
	switch w.DType {
	case tensor.BF16:
		src := w.U16()[o0*in : o1*in]
		for i, v := range src {
			s[i] = tensor.BF16ToF32(v)
		}
	case tensor.F16:
		src := w.U16()[o0*in : o1*in]
		for i, v := range src {
			s[i] = tensor.F16ToF32(v)
		}
	default:
		for i := range s {
			s[i] = float32(w.At(o0*in + i))
		}
	}
	return s
}

// linearBlock computes y[t, o0:o1] for all tokens t from the widened weight
// rows w [(o1-o0), in].
func linearBlock(y, x, w []float32, T, in, out, o0, o1 int) {
	n := o1 - o0
	for t := range T {
		xr := x[t*in : (t+1)*in]
		yr := y[t*out : (t+1)*out]
		if n == 4 {
			s0, s1, s2, s3 := dot4(xr, w[:in], w[in:2*in], w[2*in:3*in], w[3*in:4*in])
			yr[o0], yr[o0+1], yr[o0+2], yr[o0+3] = s0, s1, s2, s3
			continue
		}
		for j := range n {
			yr[o0+j] = dot(xr, w[j*in:(j+1)*in])
		}
	}
}

// dot returns Σ a[i]·b[i] with four partial sums (len(b) >= len(a)).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot4 returns the dot products of x with four rows at once, loading x once.
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
