package model

import (
	"encoding/binary"
	"fmt"
	"math"

	"hsdb/engine/tensor"
)

// narrowOverflow returns the index of the first element that is finite in
// src but ±Inf in dst, its conversion to a narrower float dtype (f64 to
// f32; f32 or bf16 to f16; f32 to bf16), or -1. dst is scanned for
// infinities, then src's element is checked (a checkpoint's own Inf stays
// one).
func narrowOverflow(src, dst *tensor.Tensor) int {
	inf, ok := dst.DType.InfBits()
	if !ok || dst.DType == tensor.F64 {
		return -1 // nothing narrows to f64
	}
	es := dst.DType.Size()
	mag := uint64(1)<<(8*es-1) - 1
	n := min(dst.Numel(), src.Numel())
	for i := range n {
		var b uint64
		if es == 2 {
			b = uint64(binary.LittleEndian.Uint16(dst.Data[2*i:]))
		} else {
			b = uint64(binary.LittleEndian.Uint32(dst.Data[4*i:]))
		}
		if b&mag == inf && !math.IsInf(src.At(i), 0) {
			return i
		}
	}
	return -1
}

// maxFinite is the largest finite value of float dtype dt (0 for others).
func maxFinite(dt tensor.DType) float64 {
	switch dt {
	case tensor.F16:
		return 65504
	case tensor.BF16:
		return float64(math.Float32frombits(0x7F7F0000))
	case tensor.F32:
		return math.MaxFloat32
	case tensor.F64:
		return math.MaxFloat64
	}
	return 0
}

// overflowError says that weight name's element i (of shape) is v, which
// dtype dt cannot hold.
func overflowError(name string, shape []int, i int, v float64, dt tensor.DType) error {
	at := fmt.Sprint(i)
	if len(shape) == 2 {
		at = fmt.Sprintf("%d, %d", i/shape[1], i%shape[1])
	}
	hint := "load it at a wider --dtype: f32"
	if dt == tensor.F32 {
		hint = "hsdb keeps weights in f32 at most: the checkpoint's value is out of its range"
	}
	return fmt.Errorf("%w: tensor %s: element [%s] is %g, beyond %s's largest %g: loaded as %s it would be ±Inf (%s)",
		ErrWeight, name, at, v, dt, maxFinite(dt), dt, hint)
}

// quantOverflow returns the error for the first weight of q that dequantizes
// to a value dt cannot hold, or nil. Scales bound the weights first (a
// block's weights are at most 448 (fp8 e4m3) or 8 (int4) times its scale),
// so only a weight whose bound passes dt's range is dequantized to find
// the element.
func quantOverflow(name string, q *tensor.Quantized, dt tensor.DType) error {
	if dt != tensor.BF16 && dt != tensor.F16 {
		return nil // f32: tensor.Quantized's own dtype (scales are checked finite there)
	}
	qmax := 8.0
	if q.Format == tensor.QuantFP8Block {
		qmax = 448
	}
	if maxAbs(q.Scale)*qmax <= maxFinite(dt) {
		return nil
	}
	w := q.Dequantize()
	if i := narrowOverflow(w, w.Convert(dt)); i >= 0 {
		return overflowError(name, w.Shape, i, w.At(i), dt)
	}
	return nil
}

// maxAbs returns the largest magnitude of float tensor t's elements (NaN
// counts as larger than any), from the raw bits for bf16, f16 and f32 (of
// one sign, bit patterns order as their values: a load of Kimi-K2's
// gigabytes of scales at --dtype bf16 scans them at memory speed).
func maxAbs(t *tensor.Tensor) float64 {
	switch t.DType {
	case tensor.BF16, tensor.F16:
		var m uint16
		for i := 0; i+2 <= len(t.Data); i += 2 {
			m = max(m, binary.LittleEndian.Uint16(t.Data[i:])&0x7FFF)
		}
		if t.DType == tensor.BF16 {
			return float64(tensor.BF16ToF32(m))
		}
		return float64(tensor.F16ToF32(m))
	case tensor.F32:
		var m uint32
		for i := 0; i+4 <= len(t.Data); i += 4 {
			m = max(m, binary.LittleEndian.Uint32(t.Data[i:])&0x7FFFFFFF)
		}
		return float64(math.Float32frombits(m))
	}
	var m float64
	for i := range t.Numel() {
		m = max(m, math.Abs(t.At(i)))
	}
	return m
}
