//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// MoERoute selects experts on the device with kernels/moe_route.cu's
// moe_route, the rule of engine/backend/moeref.Route: logits [tokens,
// experts] f32, bias [experts] f32 (0: none); writes ids [tokens, k] int32
// and weights [tokens, k] f32. groups <= 1 means no group limit.
func (d *GPU) MoERoute(ids, weights, logits, bias driver.Ptr, tokens, experts, k, groups, topkGroup int, sigmoid, norm bool, scale float32) error {
	if tokens < 0 || experts <= 0 || k <= 0 || k > experts || tokens > 1<<31-1 {
		return fmt.Errorf("%w: moe_route: %d tokens, %d experts, top_k %d", driver.ErrBadArgument, tokens, experts, k)
	}
	if groups < 1 {
		groups, topkGroup = 1, 1
	}
	if experts%groups != 0 || topkGroup < 1 || topkGroup > groups {
		return fmt.Errorf("%w: moe_route: %d experts in %d groups, topk_group %d", driver.ErrBadArgument, experts, groups, topkGroup)
	}
	smem := (3*experts + 2*groups) * 4
	if smem > 48<<10 {
		return fmt.Errorf("%w: moe_route: %d experts need %d bytes of shared memory", driver.ErrBadArgument, experts, smem)
	}
	if tokens == 0 {
		return nil
	}
	threads := min(1024, (experts+31)/32*32)
	b := func(v bool) int32 {
		if v {
			return 1
		}
		return 0
	}
	return d.Do(func() error {
		return d.launch("moe_route", "moe_route", dim3{x: uint32(tokens)}, dim3{x: uint32(threads)}, smem,
			logits, ids, weights, bias, int32(experts), int32(k), int32(groups), int32(topkGroup), b(sigmoid), b(norm), scale)
	})
}

// MoEAlign permutes n routed slots by expert on the device
// (kernels/moe_route.cu's moe_count and moe_place; vLLM's
// moe_align_block_size without padding): for the local experts [first,
// first+nlocal) of ids [n] int32 (slot t·k+j), counts [nlocal] gets each
// expert's slots, srcToken [n] the token of each permuted row (experts in
// id order, slots in order within one), slotRow [n] each slot's permuted
// row or -1 for an expert that is not local.
func (d *GPU) MoEAlign(counts, srcToken, slotRow, ids driver.Ptr, n, k, first, nlocal int) error {
	if n < 0 || k <= 0 || nlocal <= 0 || n > 1<<31-1 {
		return fmt.Errorf("%w: moe_align: %d slots, top_k %d, %d local experts", driver.ErrBadArgument, n, k, nlocal)
	}
	return d.Do(func() error {
		if err := d.launch("moe_route", "moe_count", dim3{x: uint32(nlocal + 1)}, dim3{x: 256}, 0,
			ids, int32(n), int32(first), int32(nlocal), counts, slotRow); err != nil {
			return err
		}
		return d.launch("moe_route", "moe_place", dim3{x: uint32(nlocal)}, dim3{x: 256}, 0,
			ids, int32(n), int32(k), int32(first), counts, srcToken, slotRow)
	})
}

// FP8DequantBatch widens batch fp8 weights [rows, cols] (w and s: device
// arrays of the data and f32 scale addresses; scales [ceil(rows/bh),
// ceil(cols/bw)]) into out [batch, rows, cols] of dt with
// kernels/fp8.cu's fp8_dequant_batch. vec selects the 8-element path
// (cols and bw multiples of 8, data 8-byte aligned).
func (d *GPU) FP8DequantBatch(out, w, s driver.Ptr, batch, rows, cols, bh, bw int, vec bool, dt tensor.DType) error {
	sfx, err := suffix("fp8_dequant_batch", dt)
	if err != nil {
		return err
	}
	if batch <= 0 || rows <= 0 || cols <= 0 || bh <= 0 || bw <= 0 || batch > 65535 {
		return fmt.Errorf("%w: fp8 dequant of %d weights [%d, %d] in %d×%d blocks", driver.ErrBadArgument, batch, rows, cols, bh, bw)
	}
	n := int64(rows) * int64(cols)
	if vec {
		n /= 8
	}
	g := d.flatGrid(n)
	g.x = max(1, g.x/uint32(min(batch, 32)))
	g.y = uint32(batch)
	v := int32(0)
	if vec {
		v = 1
	}
	return d.Do(func() error {
		return d.launch("fp8", "fp8_dequant_batch_"+sfx, g, dim3{x: 256}, 0, out, w, s, int64(rows), int64(cols), int32(bh), int32(bw), v)
	})
}
