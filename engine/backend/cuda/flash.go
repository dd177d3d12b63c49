//go:build cuda

package cuda

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// Tile sizes of kernels/flash_attention.cu (FA_BM queries per block, FA_BN
// keys per shared-memory tile) and its block size; kernels/flash_wgmma.cu
// takes query tiles of flashWgmmaBM (FW_BM) in blocks of flashWgmmaThreads.
const (
	flashBM           = 64
	flashBN           = 64
	flashThreads      = 128
	flashWgmmaBM      = 128
	flashWgmmaThreads = 256
)

// FlashTile is one query tile of FlashAttention: N consecutive tokens T0,
// T0+1, ... of the flattened batch (1 <= N <= the tile rows FlashTiles was
// given: GPU.FlashTileRows), all of one sequence, at
// the consecutive positions Pos0 .. Pos0+N-1, whose key at position j is
// cache row Base+j (backend.AttnArgs' Base and Pos). The kernel reads it as
// an int4 {T0, Base, Pos0, N}.
type FlashTile struct{ T0, Base, Pos0, N int32 }

// keyTiles is the number of 64-key tiles the tile's block walks: keys from
// the first token's lower bound (Pos0-window+1, at least 0, with a
// window; else 0) to the last token's position, as the kernel computes
// them.
func (t FlashTile) keyTiles(window int) int {
	first := 0
	if window > 0 {
		first = max(0, int(t.Pos0)-window+1)
	}
	return (int(t.Pos0)+int(t.N)-1-first)/flashBN + 1
}

// FlashTiles splits a flattened batch (token t of the sequence whose
// position 0 is cache row base[t], at position pos[t]) into the query
// tiles of FlashAttention: a tile ends where the sequence (base) changes,
// where positions stop being consecutive, or at rows tokens (the kernel's
// query tile, GPU.FlashTileRows: 64 or 128). The tiles are
// ordered by the number of key tiles they walk, most first (ties in batch
// order), so that the longest blocks of a causal prefill start first and
// the short ones fill the tail of the grid (FlashAttention-2 schedules the
// same way). base and pos must have the same length.
func FlashTiles(base, pos []int32, window, rows int) []FlashTile {
	var tiles []FlashTile
	for t := 0; t < len(base); {
		n := 1
		for t+n < len(base) && n < rows && base[t+n] == base[t] && pos[t+n] == pos[t]+int32(n) {
			n++
		}
		tiles = append(tiles, FlashTile{T0: int32(t), Base: base[t], Pos0: pos[t], N: int32(n)})
		t += n
	}
	slices.SortStableFunc(tiles, func(a, b FlashTile) int { return cmp.Compare(b.keyTiles(window), a.keyTiles(window)) })
	return tiles
}

// flashTileBytes encodes tiles as the kernel's int4 array (little-endian
// int32 T0, Base, Pos0, N each).
func flashTileBytes(tiles []FlashTile) []byte {
	out := make([]byte, 0, 16*len(tiles))
	for _, t := range tiles {
		for _, v := range [4]int32{t.T0, t.Base, t.Pos0, t.N} {
			out = binary.LittleEndian.AppendUint32(out, uint32(v))
		}
	}
	return out
}

// flashSupported reports whether FlashAttention handles dtype dt with key
// and value head dims dk, dv: bf16 or f16 (the tensor cores' inputs) and
// dk == dv in {64, 128}, or dk 192 with dv 128 (DeepSeek's MLA: qk_nope
// 128 + qk_rope 64, v_head_dim 128): the kernel's instantiations.
func flashSupported(dt tensor.DType, dk, dv int) bool {
	return (dt == tensor.BF16 || dt == tensor.F16) && ((dk == dv && (dk == 64 || dk == 128)) || (dk == 192 && dv == 128))
}

// flashWgmma ("0" from HSDB_CUDA_FLASH_WGMMA, or set by tests and
// benchmarks) keeps DeepSeek's MLA shape (q·k 192, v 128, bf16) on
// kernels/flash_attention.cu's mma.sync kernel on Hopper too; otherwise a
// device of compute capability 9.0 runs it on kernels/flash_wgmma.cu
// (wgmma), which BenchmarkFlashAttentionMLAPrefill measured faster at
// DeepSeek-V3's shape (0.60 ms per layer against 0.90 on an H200).
var flashWgmma = os.Getenv("HSDB_CUDA_FLASH_WGMMA")

// flashWgmmaSmem is flash_wgmma_mla_bf16's dynamic shared memory: the
// query tile [128, 192] bf16, three stages of key tiles [64, 192] and of
// value tiles [64, 128], and 1 KiB to align them to 1024 bytes.
const flashWgmmaSmem = 128*192*2 + 3*64*(192+128)*2 + 1024

// useFlashWgmma reports whether FlashAttention runs kernels/flash_wgmma.cu
// for dtype dt and head dims dk, dv: bf16 MLA (192, 128) on compute
// capability 9.0, unless flashWgmma is "0".
func (d *GPU) useFlashWgmma(dt tensor.DType, dk, dv int) bool {
	return dk == 192 && dv == 128 && dt == tensor.BF16 && flashWgmma != "0" && d.hopper()
}

// FlashTileRows is the query tile, in tokens, of the kernel FlashAttention
// runs for dtype dt and head dims dk, dv: the rows to give FlashTiles and
// AttnParams.TileRows. 128 on kernels/flash_wgmma.cu (two warpgroups of
// 64 queries share every key and value tile), else 64.
func (d *GPU) FlashTileRows(dt tensor.DType, dk, dv int) int {
	if d.useFlashWgmma(dt, dk, dv) {
		return flashWgmmaBM
	}
	return flashBM
}

// hopper reports whether the device runs sm_90a modules (wgmma): compute
// capability 9.0 exactly.
func (d *GPU) hopper() bool {
	major, minor := d.ComputeCapability()
	return major == 9 && minor == 0
}

// flashSmem is flash_attention's dynamic shared memory in bytes: K and V
// tiles of 64 rows of head dim + 8 (padding) elements, two stages each.
func flashSmem(dk, dv int) int { return 2 * flashBN * (dk + 8 + dv + 8) * 2 }

// FlashAttention computes causal attention with a fused tensor-core
// kernel (FlashAttention-2, Dao 2023): kernels/flash_attention.cu
// (mma.sync, query tiles of 64 tokens), or for bf16 MLA (192, 128) on
// compute capability 9.0 kernels/flash_wgmma.cu (wgmma, query tiles of
// 128; useFlashWgmma). For each of nTiles query tiles (tiles: the device
// copy of the int4 array of FlashTiles built with p.TileRows =
// FlashTileRows(dt, HeadDimK, HeadDimV)) and query head h, the tile's tokens t at positions p attend to
// the keys j of their sequence with max(0, p-Window+1) <= j <= p (0 <= j
// without a window): out[t, h] = softmax_j(Scale·q[t,h]·k[Base+j, h/g])·
// v[Base+j, h/g], g = Heads/KVHeads. q [tokens, QStride] and out [tokens,
// OutStride] hold head h at columns h·HeadDim..; k and v are caches
// [rows, KVHeads·HeadDim]. The caller guarantees that every cache row
// Base+j for 0 <= j <= a tile's last position lies inside the caches and
// holds that position's key and value (backend.AttnArgs). Scores, softmax
// and accumulation are f32; the probabilities are rounded to dt for the
// P·V product and the output once to dt.
//
// It returns an error wrapping ErrBadArgument for a dtype other than bf16
// or f16, head dims other than HeadDimK == HeadDimV in {64, 128} or 192
// and 128 (MLA), a TileRows (0 meaning 64) other than FlashTileRows',
// strides that are not multiples of 8 elements, device pointers that are
// not 16-byte aligned (the kernel copies 16-byte chunks), more than
// 2³¹-1 blocks, or, on kernels/flash_wgmma.cu, a Scale that is not
// positive and finite.
func (d *GPU) FlashAttention(out, q, k, v, tiles driver.Ptr, nTiles int, p AttnParams, dt tensor.DType) error {
	if err := p.check(); err != nil {
		return err
	}
	if !flashSupported(dt, p.HeadDimK, p.HeadDimV) {
		return fmt.Errorf("%w: flash attention: dtype %s, head dims %d, %d (want bf16 or f16 with equal head dims 64 or 128, or 192 and 128)",
			driver.ErrBadArgument, dt, p.HeadDimK, p.HeadDimV)
	}
	if err := flashCopies(p, nTiles, out, q, k, v, tiles); err != nil {
		return err
	}
	sfx := "bf16"
	if dt == tensor.F16 {
		sfx = "f16"
	}
	dk, dv := p.HeadDimK, p.HeadDimV
	scaleLog2 := float32(float64(p.Scale) * math.Log2E)
	grid, smem := dim3{x: uint32(nTiles * p.Heads)}, flashSmem(dk, dv)
	if rows := d.FlashTileRows(dt, dk, dv); cmp.Or(p.TileRows, flashBM) != rows {
		return fmt.Errorf("%w: flash attention: query tiles of %d tokens, the kernel for dtype %s and head dims %d, %d takes %d (FlashTileRows)",
			driver.ErrBadArgument, cmp.Or(p.TileRows, flashBM), dt, dk, dv, rows)
	}
	if d.useFlashWgmma(dt, dk, dv) {
		kld := int64(p.KVHeads * dk)
		return d.flashWgmmaLaunch(out, q, tiles, grid, p, mlaKV{k: k, pe: k.Add(2 * mlaNope), v: v,
			kLd: kld, peLd: kld, vLd: int64(p.KVHeads * dv), kHs: int32(dk), peHs: int32(dk), vHs: int32(dv)})
	}
	return d.Do(func() error {
		if dk != dv {
			return d.launch("flash_attention", "flash_attention_mla_"+sfx, grid, dim3{x: flashThreads}, smem,
				out, q, k, v, tiles, int32(p.Heads), int32(p.Heads/p.KVHeads),
				int64(p.QStride), int64(p.KVHeads*dk), int64(p.KVHeads*dv), int64(p.OutStride), int32(p.Window), scaleLog2)
		}
		return d.launch("flash_attention", "flash_attention_"+sfx, grid, dim3{x: flashThreads}, smem,
			out, q, k, v, tiles, int32(p.Heads), int32(p.Heads/p.KVHeads), int32(dk),
			int64(p.QStride), int64(p.KVHeads*dk), int64(p.KVHeads*dv), int64(p.OutStride), int32(p.Window), scaleLog2)
	})
}

// flashCopies checks what the flash kernels' 16-byte copies and grid need
// (FlashAttention's and FlashAttentionMLA's errors): q and output strides
// of whole multiples of 8 elements, 16-byte aligned device pointers, and
// at most 2³¹-1 blocks of nTiles × p.Heads.
func flashCopies(p AttnParams, nTiles int, ptrs ...driver.Ptr) error {
	if p.QStride%8 != 0 || p.OutStride%8 != 0 {
		return fmt.Errorf("%w: flash attention: q stride %d and output stride %d must be multiples of 8 elements", driver.ErrBadArgument, p.QStride, p.OutStride)
	}
	for _, x := range ptrs {
		if x%16 != 0 {
			return fmt.Errorf("%w: flash attention: device pointer %#x is not 16-byte aligned", driver.ErrBadArgument, uint64(x))
		}
	}
	if nTiles < 0 || int64(nTiles)*int64(p.Heads) > math.MaxInt32 {
		return fmt.Errorf("%w: flash attention: %d tiles × %d heads blocks", driver.ErrBadArgument, nTiles, p.Heads)
	}
	return nil
}
