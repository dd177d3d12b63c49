package quant

import (
	"encoding/binary"
	"fmt"

	"hsdb/engine/tensor"
)

// checkScales returns an error naming scale tensor name and the first
// element [row, col] that is NaN or ±Inf. A scale multiplies a whole block
// of weights (128×128 for DeepSeek's fp8, 32 columns for Kimi's int4), so
// one non-finite scale turns every output of the layer's rows into NaN or
// Inf: no quantizer writes one (compressed-tensors and DeepSeek's
// weight_quant divide a block's absolute maximum by the format's range),
// and a checkpoint that holds one is corrupt. It reads the raw bits eight
// bytes at a time without converting the tensor (bf16, f16, f32, f64: the
// exponent all ones), a few times the cost of copying the scales
// (BenchmarkCheckScales), which are a small fraction of the weight. t must
// be 2-D (tensor.Quantized.Check has passed).
func checkScales(name string, t *tensor.Tensor) error {
	if len(t.Shape) != 2 {
		return nil
	}
	var exp uint64 // the exponent field of one element
	switch t.DType {
	case tensor.BF16:
		exp = 0x7F80
	case tensor.F16:
		exp = 0x7C00
	case tensor.F32:
		exp = 0x7F800000
	case tensor.F64:
		exp = 0x7FF0000000000000
	default:
		return nil
	}
	i := firstAllOnes(t.Data, t.DType.Size(), exp)
	if i < 0 {
		return nil
	}
	return fmt.Errorf("scale tensor %s [%d, %d] is %v at [%d, %d]: a block scale must be finite (the checkpoint is corrupt)",
		name, t.Shape[0], t.Shape[1], t.At(i), i/t.Shape[1], i%t.Shape[1])
}

// firstAllOnes returns the index of the first es-byte little-endian element
// of data whose bits under exp are all ones, or -1. Whole 8-byte words are
// tested at once: exp is repeated in each of the word's 8/es lanes, and a
// lane of (word & mask) ^ mask is zero exactly where the element's exponent
// is all ones (found with the borrow test for a zero lane).
func firstAllOnes(data []byte, es int, exp uint64) int {
	var mask, ones, high uint64
	for l := 0; l < 8/es; l++ {
		mask |= exp << (8 * es * l)
		ones |= 1 << (8 * es * l)
		high |= 1 << (8*es*(l+1) - 1)
	}
	n := len(data) / es
	w := 0
	for ; w+8 <= len(data); w += 8 {
		v := binary.LittleEndian.Uint64(data[w:])&mask ^ mask
		if (v-ones)&^v&high != 0 || (es == 8 && v == 0) {
			break // a lane is zero: find it element by element below
		}
	}
	for i := w / es; i < n; i++ {
		var v uint64
		switch es {
		case 2:
			v = uint64(binary.LittleEndian.Uint16(data[2*i:]))
		case 4:
			v = uint64(binary.LittleEndian.Uint32(data[4*i:]))
		default:
			v = binary.LittleEndian.Uint64(data[8*i:])
		}
		if v&exp == exp {
			return i
		}
	}
	return -1
}
