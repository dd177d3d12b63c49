//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// softmaxSmemMax is the largest row, in bytes, that attn_softmax keeps in
// shared memory between its passes (H100/H200 allow 227 KiB a block).
const softmaxSmemMax = 200 << 10

// AttnSoftmax turns the scaled scores s [heads*qn, kn] f32 of qn
// consecutive query tokens of one sequence against kn consecutive keys
// (the first at position key0) into probabilities p [heads*qn, kn] of dtype
// dt: row r is query r % qn, allowed keys at positions max(0,
// pos[i]-window+1) (0 without a window) .. pos[i], masked keys 0
// (kernels/softmax.cu; HF eager attention's softmax in f32 then cast).
// pos [qn] int32 is on the device. It returns an error wrapping
// ErrBadArgument for non-positive sizes.
func (d *GPU) AttnSoftmax(p, s, pos driver.Ptr, heads, qn, kn, key0, window int, dt tensor.DType) error {
	sfx, err := suffix("attn_softmax", dt)
	if err != nil {
		return err
	}
	if heads <= 0 || qn <= 0 || kn <= 0 || key0 < 0 || window < 0 || int64(heads)*int64(qn) > 1<<31-1 {
		return fmt.Errorf("%w: attn_softmax: %d heads × %d queries × %d keys from %d, window %d", driver.ErrBadArgument, heads, qn, kn, key0, window)
	}
	smem, cached := 0, int32(0)
	if 4*kn <= softmaxSmemMax {
		smem, cached = 4*kn, 1
	}
	return d.Do(func() error {
		return d.launch("softmax", "attn_softmax_"+sfx, dim3{x: uint32(heads * qn)}, dim3{x: rowThreads(kn)}, smem,
			p, s, pos, int32(qn), int32(kn), int32(key0), int32(window), cached)
	})
}
