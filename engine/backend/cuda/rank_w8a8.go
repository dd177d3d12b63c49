//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// W8A8: block-scaled fp8 linears computed as DeepSeek-V3's inference
// code, vLLM (W8A8BlockFp8LinearOp), SGLang and HF's FineGrainedFP8 compute
// them for a checkpoint whose quantization_config says activation_scheme
// "dynamic": the activations quantized to float8_e4m3fn per token and
// group of 128 input columns (scale amax/448) just before the GEMM, then
// one fp8 × fp8 GEMM with f32 accumulation applying both scales
// (cuBLASLt's VEC128 × BLK128x128 scaling, tensor cores at twice the bf16
// rate) and a bf16 output. Without it (the default) the weights are
// widened to the activation dtype and the activations kept (rank_fp8.go):
// results equal the checkpoint dequantized on load, as on the CPU.
//
// It applies where cuBLASLt's scaling fits: activations bf16, 128×128
// weight blocks, in a multiple of 128 and out of 16; other linears keep
// the widening path. The routed experts' grouped kernels take bf16 inputs:
// under W8A8 both their inputs (the layer's hidden states and the SiLU·mul
// product) are rounded through the same quantization first
// (FP8ActFakeQuant: bf16(f32(q)·s), within one bf16 rounding of the fp8
// GEMM's q·s), so every fp8 GEMM of the layer sees fp8-quantized
// activations, as in vLLM's fused_moe with use_fp8_w8a8.
//
// Measured on one H200 (scripts/bench/bench-deepseek.sh: DeepSeek-V3's
// layer shapes, 2 layers, prefill of 4 × 1024 tokens, each form timed
// after a second of its own prefills): the bf16 checkpoint 21.7 ms, fp8
// widened 23.0, fp8 with --w8a8 19.5 (the 17 linears' device time 9.64
// ms widened, 6.57 on fp8 GEMMs; bf16's 9.10; routed experts 8.26
// against 8.45 widened, the two fp8 roundings included). The logits of
// this random model move with any rounding: --w8a8 against the fp8
// checkpoint widened, cosine 0.964 (the fp8 rounding of the weights,
// fp8 against bf16, 0.966).

// SetW8A8 selects W8A8 block-scaled fp8 linears (--w8a8) for this rank.
// It refuses a GPU other than compute capability 9.0 (cuBLASLt's
// block-scaled fp8 GEMM is Hopper's).
func (d *Device) SetW8A8(on bool) error {
	if on && d.g != nil && !d.hopper() {
		return fmt.Errorf("%s: %w", d.name, driver.ErrNoBlockFP8)
	}
	d.w8a8 = on
	return nil
}

// w8a8Experts reports whether routed experts of fp8 weights round their
// inputs through fp8 (W8A8 with bf16 activations), for inner widths that
// are whole groups of 128.
func (d *Device) w8a8Experts(fp8 bool, H, I int) bool {
	return d.w8a8 && fp8 && d.act == tensor.BF16 && H%128 == 0 && I%128 == 0
}

// w8a8Takes reports whether a linear on fp8 weight L with activations of
// dt runs as W8A8.
func (d *Device) w8a8Takes(L *fp8Layout, dt tensor.DType) bool {
	return d.w8a8 && dt == tensor.BF16 && L.bh == 128 && L.bw == 128 && L.in%128 == 0 && L.out%16 == 0
}

// linearW8A8 computes y [T, out] bf16 = x [T, in] · Wᵀ for fp8 weight wt
// of layout L (GPU thread): x quantized per 1×128 group into a scratch
// (FP8ActQuant), the weight's scales copied to rows padded to a multiple
// of 4 blocks when they are not (cuBLASLt's BLK128x128 layout), one
// cuBLASLt GEMM. cuBLASLt wants each k-block's row of activation scales
// 16-byte aligned, so the GEMM runs on Tp = T rounded up to 4 tokens: the
// padding rows zero, their outputs written to a scratch and dropped.
func (d *Device) linearW8A8(y, xt, wt *Tensor, L *fp8Layout, T int) error {
	kb, nb := L.in/128, (L.out+127)/128
	ld := (kb + 3) &^ 3
	Tp := (T + 3) &^ 3
	// xq [Tp, in] fp8, xs [kb, Tp] f32, padded weight scales, padded output
	sz := []int64{int64(Tp) * int64(L.in), int64(kb) * int64(Tp) * 4, 0, 0}
	if ld != kb {
		sz[2] = int64(nb) * int64(ld) * 4
	}
	if Tp != T {
		sz[3] = int64(Tp) * int64(L.out) * 2
	}
	var blocks []block
	defer func() { d.mem.free(blocks) }()
	var ps [4]driver.Ptr
	for i, n := range sz {
		if n == 0 {
			continue
		}
		p, err := d.mem.alloc(n, driver.Activations)
		if err != nil {
			return err
		}
		blocks = append(blocks, block{p, driver.Activations})
		ps[i] = p
	}
	xq, xs, ws, out := ps[0], ps[1], wt.ptr().Add(L.scaleOff), y.ptr()
	if ld != kb {
		if err := d.g.Copy2D(ps[2], int64(ld)*4, ws, int64(kb)*4, nb, int64(kb)*4); err != nil {
			return err
		}
		ws = ps[2]
	}
	if Tp != T {
		if err := d.g.Memset(xq.Add(int64(T)*int64(L.in)), 0, int64(Tp-T)*int64(L.in)); err != nil {
			return err
		}
		if err := d.g.Memset(xs, 0, sz[1]); err != nil {
			return err
		}
		out = ps[3]
	}
	if err := d.g.FP8ActQuant(xq, xs, xt.ptr(), T, L.in, Tp, xt.dt); err != nil {
		return err
	}
	err := d.g.FP8BlockLinear(out, xq, xs, wt.ptr(), ws, Tp, L.in, L.out, func(n int64) (driver.Ptr, func(), error) {
		p, err := d.mem.alloc(n, driver.Activations)
		if err != nil {
			return 0, nil, err
		}
		return p, func() { d.mem.free([]block{{p, driver.Activations}}) }, nil
	})
	if err != nil || Tp == T {
		return err
	}
	return d.g.CopyDevice(y.ptr(), out, int64(T)*int64(L.out)*2)
}
