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
// and a checkpoint that holds one is corrupt. It reads the raw bits
// without converting the tensor (bf16, f16, f32, f64; the exponent all
// ones), so it costs one pass over the scales, a small fraction of the
// weight. t must be 2-D (tensor.Quantized.Check has passed).
func checkScales(name string, t *tensor.Tensor) error {
	es := t.DType.Size()
	if es == 0 || len(t.Shape) != 2 {
		return nil
	}
	for i, n := 0, len(t.Data)/es; i < n; i++ {
		b := t.Data[i*es : (i+1)*es]
		var bad bool
		switch t.DType {
		case tensor.BF16:
			bad = binary.LittleEndian.Uint16(b)&0x7F80 == 0x7F80
		case tensor.F16:
			bad = binary.LittleEndian.Uint16(b)&0x7C00 == 0x7C00
		case tensor.F32:
			bad = binary.LittleEndian.Uint32(b)&0x7F800000 == 0x7F800000
		case tensor.F64:
			bad = binary.LittleEndian.Uint64(b)&0x7FF0000000000000 == 0x7FF0000000000000
		default:
			return nil
		}
		if bad {
			v := t.At(i)
			return fmt.Errorf("scale tensor %s [%d, %d] is %v at [%d, %d]: a block scale must be finite (the checkpoint is corrupt)",
				name, t.Shape[0], t.Shape[1], v, i/t.Shape[1], i%t.Shape[1])
		}
	}
	return nil
}
