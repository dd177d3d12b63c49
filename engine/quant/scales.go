package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"hsdb/engine/tensor"
)

// Largest magnitudes of the stored quantized values, which multiply a block
// scale on dequantization (tensor.Quantized.Dequantize): fp8 e4m3fn's
// ±448, int4's q−8 down to −8.
const (
	fp8Max  = 448
	int4Max = 8
)

// scaleDTypes are the dtypes a block scale may be stored in: the float
// dtypes tensor.Quantized.Check accepts, widened to float32 on
// dequantization (fp8 is a float, but no quantizer stores a scale in it
// and the dequantization does not read one).
var scaleDTypes = []tensor.DType{tensor.F32, tensor.BF16, tensor.F16, tensor.F64}

// checkScaleDType returns "FORMAT weight: scale dtype D, want f32, bf16,
// f16 or f64" when scale's dtype is none of scaleDTypes, before
// tensor.Quantized.Check would say "want a float dtype" of an fp8 scale.
func checkScaleDType(format tensor.QuantFormat, scale *tensor.Tensor) error {
	if scale == nil || slices.Contains(scaleDTypes, scale.DType) {
		return nil
	}
	return fmt.Errorf("%s weight: scale dtype %s, want f32, bf16, f16 or f64", format, scale.DType)
}

// checkScales returns an error naming scale tensor name and the first
// element [row, col] that is NaN or ±Inf, or finite but so large that
// qmax (the largest magnitude of the stored values: fp8Max, int4Max; what
// says which values reach it) times it is not finite in float32, where the weight
// is dequantized (the scale is widened to float32, then multiplied). A
// scale multiplies a whole block of weights (128×128 for DeepSeek's fp8,
// 32 columns for Kimi's int4), so one such scale turns every output of the
// layer's rows into NaN or Inf: no quantizer writes one (compressed-tensors
// and DeepSeek's weight_quant divide a block's absolute maximum by the
// format's range, so qmax times the scale is about that maximum, a finite
// weight), and a checkpoint that holds one is corrupt. It reads the raw
// bits eight bytes at a time without converting the tensor (bf16, f16,
// f32, f64: the magnitude's bits at least a threshold), a few times the
// cost of copying the scales (BenchmarkCheckScales), which are a small
// fraction of the weight. t must be 2-D (tensor.Quantized.Check has
// passed).
func checkScales(name string, t *tensor.Tensor, qmax float32, what string) error {
	if len(t.Shape) != 2 {
		return nil
	}
	exp, ok := t.DType.InfBits() // the exponent field of one element
	if !ok {
		return nil
	}
	es := t.DType.Size()
	i := firstAtLeast(t.Data, es, overflowBits(es, exp, qmax))
	if i < 0 {
		return nil
	}
	r, c := i/t.Shape[1], i%t.Shape[1]
	if elemBits(t.Data, es, i)&exp == exp {
		return fmt.Errorf("scale tensor %s [%d, %d] is %v at [%d, %d]: a block scale must be finite (the checkpoint is corrupt)",
			name, t.Shape[0], t.Shape[1], t.At(i), r, c)
	}
	return fmt.Errorf("scale tensor %s [%d, %d] is %v at [%d, %d]: %v times it (%s) is not finite in float32, so the block's weights dequantize to ±Inf; a quantizer writes about the block's largest |weight| / %v (the checkpoint is corrupt)",
		name, t.Shape[0], t.Shape[1], t.At(i), r, c, qmax, what, qmax)
}

// overflowBits returns the least magnitude bit pattern (sign cleared) of an
// es-byte float whose value, widened to float32 and times qmax, is not
// finite: bit patterns of one sign order as their values do, so every
// pattern from it on is refused, the exponent all ones (NaN, Inf)
// included. It searches the patterns below exp, the first non-finite one.
func overflowBits(es int, exp uint64, qmax float32) uint64 {
	bad := func(b uint64) bool {
		var s float32
		switch es {
		case 2:
			if exp == 0x7C00 {
				s = tensor.F16ToF32(uint16(b))
			} else {
				s = tensor.BF16ToF32(uint16(b))
			}
		case 4:
			s = math.Float32frombits(uint32(b))
		default:
			s = float32(math.Float64frombits(b))
		}
		p := float32(s * qmax) // rounded to float32, as Dequantize stores it (not kept wider)
		return math.IsInf(float64(p), 0) || math.IsNaN(float64(p))
	}
	lo, hi := uint64(0), exp // bad(hi) holds; find the least such
	for lo < hi {
		m := lo + (hi-lo)/2
		if bad(m) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// elemBits returns element i of es-byte little-endian data.
func elemBits(data []byte, es, i int) uint64 {
	switch es {
	case 2:
		return uint64(binary.LittleEndian.Uint16(data[2*i:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return binary.LittleEndian.Uint64(data[8*i:])
}

// firstAtLeast returns the index of the first es-byte little-endian element
// of data whose magnitude bits (the sign bit cleared) are at least min
// (1 <= min <= the exponent mask), or -1. Whole 8-byte words are tested at
// once: in each of the word's 8/es lanes the magnitude (at most top-1, top
// the lane's sign bit) plus top-min reaches top exactly where it is at
// least min, without carrying into the next lane.
func firstAtLeast(data []byte, es int, min uint64) int {
	var abs, add, high uint64
	for l := 0; l < 8/es; l++ {
		top := uint64(1) << (8*es*(l+1) - 1)
		low := uint64(1) << (8 * es * l)
		abs |= top - low
		add |= top - min*low
		high |= top
	}
	n := len(data) / es
	w := 0
	for ; w+8 <= len(data); w += 8 {
		if (binary.LittleEndian.Uint64(data[w:])&abs+add)&high != 0 {
			break // a lane is at least min: find it element by element below
		}
	}
	mag := uint64(1)<<(8*es-1) - 1 // one element's bits but its sign
	for i := w / es; i < n; i++ {
		if elemBits(data, es, i)&mag >= min {
			return i
		}
	}
	return -1
}
