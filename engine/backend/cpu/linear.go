package cpu

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// Linear computes y = x·Wᵀ + b: x [tokens, in] f32, w [out, in] f32/bf16/f16
// (nn.Linear's layout), b [out] or nil. Out: [tokens, out] f32.
//
// Work is split over blocks of output features (linearBlockRows); each
// worker widens a block of weight rows to float32 once and runs every token
// through it with dotRows while it is in cache, so bf16 weights cost one
// conversion per row per call.
func (d *Device) Linear(x, w, b backend.Tensor) backend.Tensor {
	xt, wt := host(x), host(w)
	T, in := xt.Rows(), xt.Cols()
	out, win := wt.Rows(), wt.Cols()
	if win != in {
		panic(&backend.DeviceError{Device: d.name, Op: "linear", Err: fmt.Errorf("x %v and weight %v: inner dims %d != %d", xt.Shape, wt.Shape, in, win)})
	}
	xv := f32(x)
	res, y := d.newOutput(false, T, out) // dotRows writes every element
	var bias []float32
	if b != nil {
		bt := host(b)
		if bt.Numel() != out {
			panic(&backend.DeviceError{Device: d.name, Op: "linear", Err: fmt.Errorf("bias %v for %d outputs", bt.Shape, out)})
		}
		bias = f32View(bt)
	}
	rb := linearBlockRows(out, in, T*out*in)
	blocks := (out + rb - 1) / rb
	if parallel(blocks, T*out*in) {
		parallelFor(blocks, func(lo, hi int) { linearBlocks(y, xv, wt, T, rb, lo, hi) })
	} else {
		linearBlocks(y, xv, wt, T, rb, 0, blocks)
	}
	if bias != nil {
		for t := range T {
			row := y[t*out : (t+1)*out]
			for o, bv := range bias {
				row[o] += bv
			}
		}
	}
	return res
}

// linearBlocks computes y [T, out] = x [T, in] · wᵀ for the output
// features of blocks [lo, hi) of rb rows of w [out, in].
func linearBlocks(y, x []float32, w *tensor.Tensor, T, rb, lo, hi int) {
	out, in := w.Rows(), w.Cols()
	var scratch []float32
	for blk := lo; blk < hi; blk++ {
		o0 := blk * rb
		o1 := min(o0+rb, out)
		wrows := weightRows(w, o0, o1, &scratch)
		for t := range T {
			dotRows(y[t*out+o0:t*out+o1], wrows, in, x[t*in:(t+1)*in])
		}
	}
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

// linearBlockRows returns how many weight rows one unit of Linear's work
// covers: about 16 KiB of float32 weights (so a block stays in the L1 cache
// while every token passes through it), a multiple of 4 (dotRows' group),
// and small enough that a product worth splitting (work >= parallelMin
// multiply-adds) gives every worker a block.
func linearBlockRows(out, in, work int) int {
	rb := max(4, (16<<10)/4/max(in, 1)/4*4)
	if work >= parallelMin && workers > 1 {
		rb = min(rb, max(4, (out+workers-1)/workers+3)/4*4)
	}
	return rb
}
