//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// suffix returns a kernel's dtype suffix: the float storage types every
// activation kernel is instantiated for.
func suffix(op string, dt tensor.DType) (string, error) {
	switch dt {
	case tensor.F32:
		return "f32", nil
	case tensor.BF16:
		return "bf16", nil
	case tensor.F16:
		return "f16", nil
	}
	return "", fmt.Errorf("%w: %s: dtype %s (want f32, bf16 or f16)", driver.ErrBadArgument, op, dt)
}

// rowThreads is the block size of a one-block-per-row kernel over cols
// elements: a multiple of 32 (block reductions need whole warps), at most
// 256.
func rowThreads(cols int) uint32 {
	t := (cols + 31) / 32 * 32
	return uint32(min(max(t, 32), 256))
}

// flatGrid is the grid of a grid-stride kernel over n elements with 256
// threads a block: enough blocks to fill the GPU several times, no more.
func (d *GPU) flatGrid(n int64) dim3 {
	b := (n + 255) / 256
	return dim3{x: uint32(min(b, int64(max(d.SMs(), 1))*32))}
}

// checkRows validates the row count of a one-block-per-row launch.
func checkRows(op string, rows, cols int) error {
	if rows < 0 || cols < 0 {
		return fmt.Errorf("%w: %s: negative shape [%d, %d]", driver.ErrBadArgument, op, rows, cols)
	}
	if rows > 1<<31-1 || cols > 1<<31-1 {
		return fmt.Errorf("%w: %s: shape [%d, %d] exceeds the kernel's 32-bit grid", driver.ErrBadArgument, op, rows, cols)
	}
	return nil
}

// RMSNorm computes out[r, :] = x[r, :] · rsqrt(mean(x[r, :]²) + eps) · w for
// x, out [rows, cols] and w [cols], all of dtype dt, in f32 with one final
// rounding (HF LlamaRMSNorm, vLLM RMSNorm). out may equal x.
func (d *GPU) RMSNorm(out, x, w driver.Ptr, rows, cols int, eps float32, dt tensor.DType) error {
	sfx, err := suffix("rmsnorm", dt)
	if err != nil {
		return err
	}
	if err := checkRows("rmsnorm", rows, cols); err != nil {
		return err
	}
	return d.Do(func() error {
		return d.launch("rmsnorm", "rmsnorm_"+sfx, dim3{x: uint32(rows)}, dim3{x: rowThreads(cols)}, 0,
			out, x, w, int32(cols), eps)
	})
}

// AddRMSNorm is vLLM's fused_add_rms_norm: resOut = x + res (rounded to
// dt), out = RMSNorm(resOut)·w; x, res, out, resOut [rows, cols], w [cols].
// out may equal x and resOut may equal res (vLLM updates both in place).
func (d *GPU) AddRMSNorm(out, resOut, x, res, w driver.Ptr, rows, cols int, eps float32, dt tensor.DType) error {
	sfx, err := suffix("add_rmsnorm", dt)
	if err != nil {
		return err
	}
	if err := checkRows("add_rmsnorm", rows, cols); err != nil {
		return err
	}
	return d.Do(func() error {
		return d.launch("rmsnorm", "add_rmsnorm_"+sfx, dim3{x: uint32(rows)}, dim3{x: rowThreads(cols)}, 0,
			out, resOut, x, res, w, int32(cols), eps)
	})
}

// Embedding writes out[t, :] = table[ids[t]-start, :] for start <= ids[t] <
// end and zeros otherwise (vLLM VocabParallelEmbedding: this rank's rows
// [start, end) of the vocabulary; the all-reduce over ranks completes it).
// out [tokens, hidden], ids [tokens] int32 on the device, table
// [end-start, hidden], dtype dt.
func (d *GPU) Embedding(out, ids, table driver.Ptr, tokens, hidden, start, end int, dt tensor.DType) error {
	sfx, err := suffix("embedding", dt)
	if err != nil {
		return err
	}
	if err := checkRows("embedding", tokens, hidden); err != nil {
		return err
	}
	if start < 0 || end < start || end > 1<<31-1 {
		return fmt.Errorf("%w: embedding: vocab range [%d, %d)", driver.ErrBadArgument, start, end)
	}
	return d.Do(func() error {
		return d.launch("embedding", "embedding_"+sfx, dim3{x: uint32(tokens)}, dim3{x: rowThreads(hidden)}, 0,
			out, ids, table, int32(hidden), int32(start), int32(end))
	})
}

// SiluMul computes out[r, c] = silu(gate[r*gateStride + c]) · up[r*upStride
// + c] for out [rows, cols] (vLLM SiluAndMul; silu(g) = g/(1+e^-g)). With
// vLLM's merged gate_up [rows, 2*cols]: gate = x, up = x.Add(cols*size),
// strides 2*cols.
func (d *GPU) SiluMul(out, gate, up driver.Ptr, rows, cols, gateStride, upStride int, dt tensor.DType) error {
	sfx, err := suffix("silu_mul", dt)
	if err != nil {
		return err
	}
	if err := checkRows("silu_mul", rows, cols); err != nil {
		return err
	}
	if gateStride < cols || upStride < cols {
		return fmt.Errorf("%w: silu_mul: strides %d, %d shorter than %d columns", driver.ErrBadArgument, gateStride, upStride, cols)
	}
	g := dim3{x: uint32(min(rows, max(d.SMs(), 1)*16))}
	return d.Do(func() error {
		return d.launch("elementwise", "silu_mul_"+sfx, g, dim3{x: rowThreads(cols)}, 0,
			out, gate, up, int64(rows), int32(cols), int64(gateStride), int64(upStride))
	})
}

// Add computes out[i] = a[i] + b[i] for n elements of dt.
func (d *GPU) Add(out, a, b driver.Ptr, n int64, dt tensor.DType) error {
	sfx, err := suffix("add", dt)
	if err != nil {
		return err
	}
	return d.Do(func() error { return d.launch("elementwise", "add_"+sfx, d.flatGrid(n), dim3{x: 256}, 0, out, a, b, n) })
}

// Scale computes out[i] = a[i] · s for n elements of dt.
func (d *GPU) Scale(out, a driver.Ptr, s float32, n int64, dt tensor.DType) error {
	sfx, err := suffix("scale", dt)
	if err != nil {
		return err
	}
	return d.Do(func() error {
		return d.launch("elementwise", "scale_"+sfx, d.flatGrid(n), dim3{x: 256}, 0, out, a, s, n)
	})
}

// Cast converts n elements from dtype from to dtype to (f32, bf16, f16;
// round to nearest even, as PyTorch's .to). from == to is a device copy.
func (d *GPU) Cast(out, in driver.Ptr, n int64, from, to tensor.DType) error {
	if from == to {
		return d.CopyDevice(out, in, n*int64(from.Size()))
	}
	fs, err := suffix("cast", from)
	if err != nil {
		return err
	}
	ts, err := suffix("cast", to)
	if err != nil {
		return err
	}
	return d.Do(func() error {
		return d.launch("cast", "cast_"+fs+"_"+ts, d.flatGrid(n), dim3{x: 256}, 0, out, in, n)
	})
}

// FP8Dequant widens a float8_e4m3fn weight w [rows, cols] with its block
// scales scaleInv [ceil(rows/blockRows), ceil(cols/blockCols)] f32 to out
// [rows, cols] of dtype to (f32 or bf16): out = w · scaleInv[r/blockRows,
// c/blockCols], DeepSeek-V3's weight_scale_inv with weight_block_size
// [128, 128].
func (d *GPU) FP8Dequant(out, w, scaleInv driver.Ptr, rows, cols, blockRows, blockCols int, to tensor.DType) error {
	if to != tensor.F32 && to != tensor.BF16 {
		return fmt.Errorf("%w: fp8 dequant to %s (want f32 or bf16)", driver.ErrBadArgument, to)
	}
	if rows < 0 || cols < 0 || blockRows <= 0 || blockCols <= 0 {
		return fmt.Errorf("%w: fp8 dequant of [%d, %d] with blocks [%d, %d]", driver.ErrBadArgument, rows, cols, blockRows, blockCols)
	}
	n := int64(rows) * int64(cols)
	return d.Do(func() error {
		return d.launch("cast", "fp8_dequant_"+to.String(), d.flatGrid(n), dim3{x: 256}, 0,
			out, w, scaleInv, int64(rows), int64(cols), int32(blockRows), int32(blockCols))
	})
}

// GatherRows writes out[i, :] = src[idx[i], :] for i < n: MoE dispatch,
// collecting the tokens routed to one expert. out [n, cols], src
// [srcRows, cols], idx [n] int32 on the device. An index outside
// [0, srcRows) yields a NaN row (validate indices on the host first).
func (d *GPU) GatherRows(out, src, idx driver.Ptr, n, cols, srcRows int, dt tensor.DType) error {
	sfx, err := suffix("gather_rows", dt)
	if err != nil {
		return err
	}
	if err := checkRows("gather_rows", n, cols); err != nil {
		return err
	}
	return d.Do(func() error {
		return d.launch("moe", "gather_rows_"+sfx, dim3{x: uint32(n)}, dim3{x: rowThreads(cols)}, 0,
			out, src, idx, int32(cols), int32(srcRows))
	})
}

// MoECombine is the weighted scatter-add of expert outputs back to their
// tokens, done as a deterministic gather: out[t, :] = (accumulate ? out[t,
// :] : 0) + Σ_k weight[t*topk+k] · src[rows[t*topk+k], :], in f32, k in
// order, rounded once. out [tokens, cols]; src [srcRows, cols] the expert
// outputs; rows [tokens*topk] int32 (-1 skips a slot) and weight
// [tokens*topk] f32 on the device.
func (d *GPU) MoECombine(out, src, rows, weight driver.Ptr, tokens, topk, cols, srcRows int, accumulate bool, dt tensor.DType) error {
	sfx, err := suffix("moe_combine", dt)
	if err != nil {
		return err
	}
	if err := checkRows("moe_combine", tokens, cols); err != nil {
		return err
	}
	if topk <= 0 {
		return fmt.Errorf("%w: moe_combine: topk %d", driver.ErrBadArgument, topk)
	}
	acc := int32(0)
	if accumulate {
		acc = 1
	}
	return d.Do(func() error {
		return d.launch("moe", "moe_combine_"+sfx, dim3{x: uint32(tokens)}, dim3{x: rowThreads(cols)}, 0,
			out, src, rows, weight, int32(topk), int32(cols), acc, int32(srcRows))
	})
}

// RoPEParams places the rotary part of each head in a [Tokens, RowStride]
// tensor: head h of token t starts at t*RowStride + h*HeadStride, and its
// RotDim rotated elements start RotOffset into the head.
type RoPEParams struct {
	Tokens, Heads         int
	RowStride, HeadStride int
	RotOffset, RotDim     int
	// Interleaved selects GPT-J / llama2.c pairs (2i, 2i+1) (vLLM
	// is_neox_style=False, DeepSeek MLA); false is NeoX / HF rotate_half
	// pairs (i, i+RotDim/2) (Llama, Qwen, Mistral).
	Interleaved bool
	// MScale multiplies cos and sin (YaRN's attention scaling); 1 for plain
	// RoPE.
	MScale float32
}

// ropeTokMaxDim is the largest rotary dim RoPE runs on kernels/rope.cu's
// rope_tok (its angles in 4·rot_dim bytes of shared memory, under the 48
// KiB a launch gets without opting in); wider ones take the flat kernel.
const ropeTokMaxDim = 4096

// RoPE rotates x in place: for pair i of a head at position p, with f =
// p·invFreq[i] in f32, (a, b) ← (a cos f − b sin f, b cos f + a sin f)·MScale
// (RoFormer, Su et al. 2021). positions [Tokens] int32 and invFreq
// [RotDim/2] f32 are on the device.
func (d *GPU) RoPE(x, positions, invFreq driver.Ptr, p RoPEParams, dt tensor.DType) error {
	sfx, err := suffix("rope", dt)
	if err != nil {
		return err
	}
	if p.RotDim <= 0 || p.RotDim%2 != 0 || p.RotOffset < 0 || p.RotOffset+p.RotDim > p.HeadStride ||
		p.Heads <= 0 || p.Heads*p.HeadStride > p.RowStride || p.Tokens < 0 {
		return fmt.Errorf("%w: rope: rot_dim %d at offset %d of head stride %d, %d heads in row stride %d",
			driver.ErrBadArgument, p.RotDim, p.RotOffset, p.HeadStride, p.Heads, p.RowStride)
	}
	il := int32(0)
	if p.Interleaved {
		il = 1
	}
	n := int64(p.Tokens) * int64(p.Heads) * int64(p.RotDim/2)
	if p.RotDim <= ropeTokMaxDim && p.Tokens > 0 {
		// One block per token (up to 65535 blocks, then grid-stride): the
		// token's angles computed once into 4·RotDim bytes of shared memory.
		return d.Do(func() error {
			return d.launch("rope", "rope_tok_"+sfx, dim3{x: uint32(min(p.Tokens, 65535))}, dim3{x: 128}, 4*p.RotDim,
				x, positions, invFreq, int64(p.Tokens), int32(p.Heads), int64(p.RowStride), int32(p.HeadStride),
				int32(p.RotOffset), int32(p.RotDim), il, p.MScale)
		})
	}
	return d.Do(func() error {
		return d.launch("rope", "rope_"+sfx, d.flatGrid(n), dim3{x: 256}, 0,
			x, positions, invFreq, int64(p.Tokens), int32(p.Heads), int64(p.RowStride), int32(p.HeadStride),
			int32(p.RotOffset), int32(p.RotDim), il, p.MScale)
	})
}
