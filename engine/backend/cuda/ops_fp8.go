//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// FP8ActQuant quantizes x [tokens, cols] of dt (cols a multiple of 128)
// per group of 128 columns for the block-scaled fp8 GEMM
// (driver.GPU.FP8BlockLinear) with kernels/fp8.cu's fp8_act_quant: q
// [tokens, cols] float8_e4m3fn = x / s rounded to nearest even and
// saturated at ±448, s = max(amax, 1e-10) / 448 per group, stored f32 at
// sc[g·sld + t] (sld >= tokens; vLLM's per_token_group_quant_fp8,
// DeepSeek-V3's act_quant). q must be 4-byte aligned.
func (d *GPU) FP8ActQuant(q, sc, x driver.Ptr, tokens, cols, sld int, dt tensor.DType) error {
	sfx, err := suffix("fp8_act_quant", dt)
	if err != nil {
		return err
	}
	if tokens < 0 || cols <= 0 || cols%128 != 0 || sld < tokens || int64(tokens)*int64(cols/128) > 1<<31-1 {
		return fmt.Errorf("%w: fp8 activation quantization of [%d, %d], scale stride %d (columns a positive multiple of 128, stride >= tokens)", driver.ErrBadArgument, tokens, cols, sld)
	}
	if tokens == 0 {
		return nil
	}
	warps := int64(tokens) * int64(cols/128)
	return d.Do(func() error {
		return d.launch("fp8", "fp8_act_quant_"+sfx, dim3{x: uint32((warps + 7) / 8)}, dim3{x: 256}, 0, x, q, sc, int64(tokens), int64(cols), int64(sld))
	})
}

// FP8ActFakeQuant writes out [tokens, cols] bf16 = x rounded through
// W8A8's activation quantization (FP8ActQuant's q and s per group of 128
// columns, then bf16(f32(q)·s)) with kernels/fp8.cu's
// fp8_act_fake_quant_bf16: the input a bf16 GEMM sees in place of an fp8
// GEMM's (the routed experts under --w8a8). out may be x.
func (d *GPU) FP8ActFakeQuant(out, x driver.Ptr, tokens, cols int) error {
	if tokens < 0 || cols <= 0 || cols%128 != 0 || int64(tokens)*int64(cols/128) > 1<<31-1 {
		return fmt.Errorf("%w: fp8 activation rounding of [%d, %d] (columns a positive multiple of 128)", driver.ErrBadArgument, tokens, cols)
	}
	if tokens == 0 {
		return nil
	}
	warps := int64(tokens) * int64(cols/128)
	return d.Do(func() error {
		return d.launch("fp8", "fp8_act_fake_quant_bf16", dim3{x: uint32((warps + 7) / 8)}, dim3{x: 256}, 0, x, out, int64(tokens), int64(cols))
	})
}
