//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// Tile sizes of attention_prefill (kernels/attention.cu BM, BN).
const (
	prefillBM = 16
	prefillBN = 32
	decodeMax = 256 // attention_decode handles dk, dv <= 32*DEC_MAXV
)

// TokenBatch is the device-side description of one forward's flattened
// token batch (vLLM's varlen layout): token t belongs to KV-cache slot
// slots[t] at position positions[t] (NewTokenBatch). Built once per forward and shared by
// the KV-cache writes, RoPE and attention of every layer.
type TokenBatch struct {
	d         *GPU
	tokens    int
	numSlots  int
	capacity  int
	slot, pos *driver.Buffer // [tokens] int32
	tiles     *driver.Buffer // [nTiles] int2 {first token, count}
	nTiles    int
	singles   bool // every tile is one token: the decode kernel fits
}

// NewTokenBatch validates and uploads a batch: slots and positions
// [tokens], each slot in [0, numSlots) and each position in [0, capacity)
// (the KV cache is [numSlots, capacity, ...]). Consecutive tokens of one
// slot form attention query tiles of up to 16. It returns an error wrapping
// ErrBadArgument naming the first bad token.
func (d *GPU) NewTokenBatch(slots, positions []int32, numSlots, capacity int) (*TokenBatch, error) {
	if len(slots) != len(positions) {
		return nil, fmt.Errorf("%w: token batch: %d slots but %d positions", driver.ErrBadArgument, len(slots), len(positions))
	}
	for t := range slots {
		if s := int(slots[t]); s < 0 || s >= numSlots {
			return nil, fmt.Errorf("%w: token batch: token %d has slot %d, want [0, %d)", driver.ErrBadArgument, t, s, numSlots)
		}
		if p := int(positions[t]); p < 0 || p >= capacity {
			return nil, fmt.Errorf("%w: token batch: token %d (slot %d) has position %d, want [0, %d) (KV cache capacity)", driver.ErrBadArgument, t, slots[t], p, capacity)
		}
	}
	b := &TokenBatch{d: d, tokens: len(slots), numSlots: numSlots, capacity: capacity, singles: true}
	var tiles []byte
	for t := 0; t < len(slots); {
		n := 1
		for t+n < len(slots) && n < prefillBM && slots[t+n] == slots[t] {
			n++
		}
		tiles = binary.LittleEndian.AppendUint32(tiles, uint32(t))
		tiles = binary.LittleEndian.AppendUint32(tiles, uint32(n))
		if n > 1 {
			b.singles = false
		}
		b.nTiles++
		t += n
	}
	var err error
	up := func(data []byte) *driver.Buffer {
		if err != nil {
			return nil
		}
		var buf *driver.Buffer
		buf, err = d.Alloc(int64(len(data)), driver.Activations)
		if err == nil {
			err = d.CopyToDevice(buf.Ptr(), data)
		}
		return buf
	}
	b.slot = up(int32Bytes(slots))
	b.pos = up(int32Bytes(positions))
	b.tiles = up(tiles)
	if err != nil {
		b.Free()
		return nil, fmt.Errorf("token batch of %d tokens: %w", len(slots), err)
	}
	return b, nil
}

func int32Bytes(v []int32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(x))
	}
	return out
}

// Tokens returns the number of tokens in the batch.
func (b *TokenBatch) Tokens() int { return b.tokens }

// Free releases the batch's device arrays.
func (b *TokenBatch) Free() error {
	var first error
	for _, x := range []*driver.Buffer{b.slot, b.pos, b.tiles} {
		if err := x.Free(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// KVCacheWrite scatters src rows into the cache: cache[slot[t], pos[t], :]
// = src[t*srcStride : t*srcStride+width] for every token of b. cache is
// [numSlots, capacity, width] (width = kv_heads·head_dim) of dtype dt.
func (d *GPU) KVCacheWrite(cache, src driver.Ptr, b *TokenBatch, width, srcStride int, dt tensor.DType) error {
	sfx, err := suffix("kv_cache_write", dt)
	if err != nil {
		return err
	}
	if width <= 0 || srcStride < width {
		return fmt.Errorf("%w: kv cache write: width %d, source stride %d", driver.ErrBadArgument, width, srcStride)
	}
	return d.Do(func() error {
		return d.launch("attention", "kv_cache_write_"+sfx, dim3{x: uint32(b.tokens)}, dim3{x: rowThreads(width)}, 0,
			cache, src, b.slot.Ptr(), b.pos.Ptr(), int32(width), int64(srcStride), int32(b.numSlots), int32(b.capacity))
	})
}

// AttnParams describes causal attention over a TokenBatch.
type AttnParams struct {
	Heads, KVHeads int // query heads and KV heads on this rank (GQA: Heads % KVHeads == 0)
	HeadDimK       int // q and k head dim (DeepSeek MLA: qk_nope + qk_rope = 192)
	HeadDimV       int // v and output head dim (MLA: 128)
	QStride        int // elements per q row; 0 = Heads*HeadDimK
	OutStride      int // elements per output row; 0 = Heads*HeadDimV
	Window         int // sliding window in keys including the token's own; 0 = none
	Scale          float32
	TileRows       int // FlashAttention only: the rows its FlashTiles were built with (GPU.FlashTileRows); 0 = 64
}

func (p *AttnParams) check() error {
	if p.Heads <= 0 || p.KVHeads <= 0 || p.Heads%p.KVHeads != 0 {
		return fmt.Errorf("%w: attention: %d query heads are not a multiple of %d kv heads", driver.ErrBadArgument, p.Heads, p.KVHeads)
	}
	if p.HeadDimK <= 0 || p.HeadDimV <= 0 || p.Window < 0 {
		return fmt.Errorf("%w: attention: head dims %d, %d, window %d", driver.ErrBadArgument, p.HeadDimK, p.HeadDimV, p.Window)
	}
	if p.QStride == 0 {
		p.QStride = p.Heads * p.HeadDimK
	}
	if p.OutStride == 0 {
		p.OutStride = p.Heads * p.HeadDimV
	}
	if p.QStride < p.Heads*p.HeadDimK || p.OutStride < p.Heads*p.HeadDimV {
		return fmt.Errorf("%w: attention: q stride %d or output stride %d shorter than its heads", driver.ErrBadArgument, p.QStride, p.OutStride)
	}
	return nil
}

// prefillSmem is attention_prefill's dynamic shared memory in bytes (the
// carve-up at the top of the kernel).
func prefillSmem(dk, dv int) int {
	floats := prefillBM*dk + prefillBN*(dk+1) + prefillBN*dv + prefillBM*prefillBN + prefillBM*dv + 3*prefillBM
	return 4*floats + 2*4*prefillBM
}

// Attention computes causal attention for every token of b: out[t, head h]
// = softmax_j((q[t,h]·k[slot,j,h/g])·Scale) · v[slot,j,h/g] over keys j of
// the token's slot from max(0, pos−Window+1) (0 without a window) to pos,
// g = Heads/KVHeads. q [tokens, QStride], caches [numSlots, capacity,
// KVHeads·HeadDimK|V], out [tokens, OutStride], dtype dt; the caches must
// already hold this batch's keys (KVCacheWrite). A batch of single-token
// tiles (decode) uses the decode kernel, anything else the tiled prefill
// kernel; both give the same result up to f32 summation order.
func (d *GPU) Attention(out, q, kCache, vCache driver.Ptr, b *TokenBatch, p AttnParams, dt tensor.DType) error {
	if b.singles && p.HeadDimK <= decodeMax && p.HeadDimV <= decodeMax {
		return d.AttentionDecode(out, q, kCache, vCache, b, p, dt)
	}
	return d.AttentionPrefill(out, q, kCache, vCache, b, p, dt)
}

// AttentionPrefill is Attention with the tiled online-softmax kernel (16
// query tokens of one slot against 32 keys at a time in shared memory).
func (d *GPU) AttentionPrefill(out, q, kCache, vCache driver.Ptr, b *TokenBatch, p AttnParams, dt tensor.DType) error {
	sfx, err := suffix("attention", dt)
	if err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	smem := prefillSmem(p.HeadDimK, p.HeadDimV)
	if smem > 227<<10 {
		return fmt.Errorf("%w: attention: head dims %d, %d need %d bytes of shared memory (max 227 KiB)", driver.ErrBadArgument, p.HeadDimK, p.HeadDimV, smem)
	}
	return d.Do(func() error {
		return d.launch("attention", "attention_prefill_"+sfx, dim3{x: uint32(b.nTiles), y: uint32(p.Heads)}, dim3{x: 128}, smem,
			out, q, kCache, vCache, b.slot.Ptr(), b.pos.Ptr(), b.tiles.Ptr(), int32(p.Heads), int32(p.KVHeads),
			int32(p.HeadDimK), int32(p.HeadDimV), int64(p.QStride), int64(p.OutStride), int32(b.capacity), int32(p.Window), p.Scale)
	})
}

// AttentionDecode is Attention with one block per (token, head), four warps
// splitting the keys; head dims at most 256.
func (d *GPU) AttentionDecode(out, q, kCache, vCache driver.Ptr, b *TokenBatch, p AttnParams, dt tensor.DType) error {
	sfx, err := suffix("attention", dt)
	if err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	if p.HeadDimK > decodeMax || p.HeadDimV > decodeMax {
		return fmt.Errorf("%w: attention decode: head dims %d, %d exceed %d", driver.ErrBadArgument, p.HeadDimK, p.HeadDimV, decodeMax)
	}
	return d.Do(func() error {
		return d.launch("attention", "attention_decode_"+sfx, dim3{x: uint32(b.tokens), y: uint32(p.Heads)}, dim3{x: 128}, 0,
			out, q, kCache, vCache, b.slot.Ptr(), b.pos.Ptr(), int32(p.Heads), int32(p.KVHeads),
			int32(p.HeadDimK), int32(p.HeadDimV), int64(p.QStride), int64(p.OutStride), int32(b.capacity), int32(p.Window), p.Scale)
	})
}
