//go:build cuda

package cuda

import (
	"cmp"
	"fmt"
	"math"
	"os"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// mlaNope is the key dims kernels/flash_wgmma.cu reads from k (its
// FW_NOPE: DeepSeek-V3's and Kimi-K2's qk_nope_head_dim); the other 64 of
// the 192 come from the rope key.
const mlaNope = 128

// mlaKV says where kernels/flash_wgmma.cu reads keys and values (its
// comment on the kernel's arguments): key dims 0..127 of key row j and kv
// head g at k + j·kLd + g·kHs, dims 128..191 at pe + j·peLd + g·peHs,
// values at v + j·vLd + g·vHs; strides in elements.
type mlaKV struct {
	k, pe, v       driver.Ptr
	kLd, peLd, vLd int64
	kHs, peHs, vHs int32
}

// flashPingPong ("0" from HSDB_CUDA_FLASH_PINGPONG, or set by benchmarks)
// runs kernels/flash_wgmma.cu's two warpgroups in lockstep
// (flash_wgmma_mla_bf16_lockstep) instead of ping-pong, where warpgroup 1
// issues each key tile's products after warpgroup 0 has issued its own so
// that each one's softmax runs under the other's products
// (BenchmarkFlashAttentionMLAPrefill times both).
var flashPingPong = os.Getenv("HSDB_CUDA_FLASH_PINGPONG")

// flashWgmmaLaunch launches flash_wgmma_mla_bf16 (or its lockstep form,
// flashPingPong) on grid for the checked parameters p and the key and
// value layout kv.
func (d *GPU) flashWgmmaLaunch(out, q, tiles driver.Ptr, grid dim3, p AttnParams, kv mlaKV) error {
	scaleLog2 := float32(float64(p.Scale) * math.Log2E)
	if !(scaleLog2 > 0) || math.IsInf(float64(scaleLog2), 1) {
		// The kernel keeps the row maxima of the unscaled scores, which
		// is the maximum of the scaled ones only for a positive scale.
		return fmt.Errorf("%w: flash_wgmma: softmax scale %g (want positive and finite)", driver.ErrBadArgument, p.Scale)
	}
	fn := "flash_wgmma_mla_bf16"
	if flashPingPong == "0" {
		fn = "flash_wgmma_mla_bf16_lockstep"
	}
	return d.Do(func() error {
		return d.launch("flash_wgmma", fn, grid, dim3{x: flashWgmmaThreads}, flashWgmmaSmem,
			out, q, kv.k, kv.pe, kv.v, tiles, int32(p.Heads), int32(p.Heads/p.KVHeads),
			int64(p.QStride), kv.kLd, kv.peLd, kv.vLd, int64(p.OutStride), kv.kHs, kv.peHs, kv.vHs, int32(p.Window), scaleLog2)
	})
}

// FlashAttentionMLA is FlashAttention for DeepSeek's multi-head latent
// attention with the keys and values read straight from where the layer
// makes them, with no per-head key or value tensor written: kv [rows,
// Heads·256] is kv_b_proj's output (per head [k_nope 128 | v 128]) and kPe
// [rows, 64] the rotated rope key that every head shares (HF's
// DeepseekV3Attention expands it to each head; vLLM's MLA prefill reads it
// once the same way). Key j of a tile's sequence is row Base+j of both;
// head h's key is [kv[j, h·256 : h·256+128] | kPe[j]] and its value
// kv[j, h·256+128 : (h+1)·256]. p as FlashAttention's with HeadDimK 192,
// HeadDimV 128 and KVHeads == Heads (MLA has no shared kv heads); bf16
// only.
//
// It runs only where kernels/flash_wgmma.cu runs (UseFlashAttentionMLA):
// elsewhere it returns an error wrapping ErrBadArgument, as it does for
// other head dims, a dtype other than bf16, strides or pointers the
// kernel cannot copy in 16-byte chunks, more than 2³¹-1 blocks, or a
// Scale that is not positive and finite.
func (d *GPU) FlashAttentionMLA(out, q, kv, kPe, tiles driver.Ptr, nTiles int, p AttnParams, dt tensor.DType) error {
	if err := p.check(); err != nil {
		return err
	}
	if !d.UseFlashAttentionMLA(dt) || p.HeadDimK != 192 || p.HeadDimV != 128 || p.KVHeads != p.Heads {
		return fmt.Errorf("%w: flash attention on kv_b_proj's output: dtype %s, head dims %d, %d, %d/%d heads on compute capability 9.0 (want bf16, 192 and 128, kv heads = heads, wgmma)",
			driver.ErrBadArgument, dt, p.HeadDimK, p.HeadDimV, p.Heads, p.KVHeads)
	}
	if err := flashCopies(p, nTiles, out, q, kv, kPe, tiles); err != nil {
		return err
	}
	if rows := cmp.Or(p.TileRows, flashBM); rows != flashWgmmaBM {
		return fmt.Errorf("%w: flash attention: query tiles of %d tokens, the kernel takes %d (FlashTileRows)", driver.ErrBadArgument, rows, flashWgmmaBM)
	}
	ld := int64(p.Heads) * 256
	return d.flashWgmmaLaunch(out, q, tiles, dim3{x: uint32(nTiles * p.Heads)}, p, mlaKV{k: kv, pe: kPe, v: kv.Add(2 * mlaNope),
		kLd: ld, peLd: 64, vLd: ld, kHs: 256, peHs: 0, vHs: 256})
}

// UseFlashAttentionMLA reports whether FlashAttentionMLA runs for dtype
// dt: kernels/flash_wgmma.cu is taken (bf16 on compute capability 9.0,
// HSDB_CUDA_FLASH_WGMMA not "0").
func (d *GPU) UseFlashAttentionMLA(dt tensor.DType) bool { return d.useFlashWgmma(dt, 192, 128) }
