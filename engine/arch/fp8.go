package arch

import (
	"fmt"
	"slices"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Block-scaled FP8 weights, as DeepSeek-V3 and Kimi-K2 ship them: every
// large linear weight is stored as float8_e4m3fn next to a float32
// `<name>_scale_inv` tensor holding one scale per block of
// weight_block_size[0] rows × weight_block_size[1] columns (128×128 in the
// released checkpoints; edge blocks may be partial), and the real weight is
// fp8 · scale (DeepSeek-V3 inference/kernel.py weight_dequant; HF
// transformers' FineGrainedFP8 integration with dequantize=True). hsdb
// dequantizes on load.

// FP8Config is config.json's quantization_config for block-quantized fp8
// (HF FineGrainedFP8Config / DeepSeek-V3's config): quant_method "fp8", fmt
// "e4m3", weight_block_size [rows, cols].
type FP8Config struct {
	QuantMethod      string `json:"quant_method"`
	Fmt              string `json:"fmt"`
	ActivationScheme string `json:"activation_scheme"`
	WeightBlockSize  []int  `json:"weight_block_size"`
}

// check returns an error naming the field unless the config describes
// e4m3 weights with 2-D block scales.
func (q *FP8Config) check() error {
	if q.QuantMethod != "fp8" {
		return fmt.Errorf("quantization_config: quant_method %q is not supported (block fp8, quant_method \"fp8\", is)", q.QuantMethod)
	}
	if q.Fmt != "" && q.Fmt != "e4m3" {
		return fmt.Errorf("quantization_config: fmt %q is not supported (e4m3 is)", q.Fmt)
	}
	if len(q.WeightBlockSize) != 2 || q.WeightBlockSize[0] <= 0 || q.WeightBlockSize[1] <= 0 {
		return fmt.Errorf("quantization_config: weight_block_size %v: want two positive sizes [rows, cols] (per-tensor fp8 is not supported)", q.WeightBlockSize)
	}
	return nil
}

// scaleName returns the scale tensor's name for weight name: DeepSeek's
// "<module>.weight" → "<module>.weight_scale_inv".
func scaleName(name string) string { return name + "_scale_inv" }

// fp8Dequantizer returns the Loader's Dequant hook for block size bh × bw:
// it reads the weight's scale from src and returns the float32 weight.
func fp8Dequantizer(src model.WeightSource, bh, bw int) func(string, *tensor.Tensor) (*tensor.Tensor, error) {
	return func(name string, w *tensor.Tensor) (*tensor.Tensor, error) {
		if !strings.HasSuffix(name, "weight") {
			return nil, fmt.Errorf("fp8 tensor %s is not a weight (only <module>.weight tensors carry block scales)", name)
		}
		sn := scaleName(name)
		if _, _, ok := src.Meta(sn); !ok {
			return nil, fmt.Errorf("fp8 weight %s has no scale tensor %s in the checkpoint", name, sn)
		}
		s, err := src.Tensor(sn)
		if err != nil {
			return nil, err
		}
		return dequantFP8Block(w, s, bh, bw)
	}
}

// dequantFP8Block returns w (F8E4M3, shape [..., rows, cols]) as a new F32
// tensor of the same shape with element [.., i, j] = f32(w[.., i, j]) ·
// scale[.., i/bh, j/bw], rounded to float32 as PyTorch's f32 multiply does.
// scale (F32, BF16 or F16) must have shape [..., ceil(rows/bh),
// ceil(cols/bw)] with the same leading dimensions as w; anything else is an
// error naming both shapes.
func dequantFP8Block(w, scale *tensor.Tensor, bh, bw int) (*tensor.Tensor, error) {
	if w.DType != tensor.F8E4M3 {
		return nil, fmt.Errorf("dequantize: weight dtype %s, want fp8_e4m3", w.DType)
	}
	if !scale.DType.IsFloat() || scale.DType == tensor.F8E4M3 {
		return nil, fmt.Errorf("dequantize: scale dtype %s, want a float dtype", scale.DType)
	}
	n := len(w.Shape)
	if n < 2 || len(scale.Shape) != n {
		return nil, fmt.Errorf("dequantize: weight %s and scale %s: want [..., rows, cols] and [..., ceil(rows/%d), ceil(cols/%d)]",
			tensor.ShapeString(w.Shape), tensor.ShapeString(scale.Shape), bh, bw)
	}
	rows, cols := w.Shape[n-2], w.Shape[n-1]
	br, bc := (rows+bh-1)/bh, (cols+bw-1)/bw
	want := append(append([]int(nil), w.Shape[:n-2]...), br, bc)
	if !slices.Equal(scale.Shape, want) {
		return nil, fmt.Errorf("dequantize: scale shape %s for weight %s with %d×%d blocks, want %s",
			tensor.ShapeString(scale.Shape), tensor.ShapeString(w.Shape), bh, bw, tensor.ShapeString(want))
	}
	sv := scale.ToF32()
	out := tensor.New(tensor.F32, w.Shape...)
	ov := out.F32()
	batch := tensor.Numel(w.Shape[:n-2])
	for b := range batch {
		wb := w.Data[b*rows*cols : (b+1)*rows*cols]
		sb := sv[b*br*bc : (b+1)*br*bc]
		ob := ov[b*rows*cols : (b+1)*rows*cols]
		for i := range rows {
			srow := sb[(i/bh)*bc : (i/bh+1)*bc]
			for j := range cols {
				ob[i*cols+j] = tensor.FP8E4M3ToF32(wb[i*cols+j]) * srow[j/bw]
			}
		}
	}
	return out, nil
}
