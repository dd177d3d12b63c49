package nn

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// MLA's KV cache and the keys and values its attention reads.
//
// The cache holds, per token, the latent [c_kv | k_pe]: c_kv after
// kv_a_layernorm [kv_lora_rank] and k_pe after RoPE [qk_rope_head_dim],
// the same on every rank (vLLM vllm/attention/backends/mla/common.py:
// MLACommonBackend.get_kv_cache_shape is [blocks, block_size, 576] on
// DeepSeek-V3, and its compute-friendly path, _forward_prefill and the
// chunked-prefill context loop, expands cached kv_c by kv_b_proj into
// k_nope and v before a multi-head attention). hsdb takes that path for
// every step: a plain prefill attends on kv_b_proj's output and k_pe
// through Device.MLAAttention (attendPrefill: the CUDA backend reads them
// in place, others write the per-head keys and values out first); any
// other step runs the backends' Attention on per-head keys [ctx,
// nh·(qk_nope + qk_rope)] and values [ctx, nh·v_head_dim] of the step's
// context, built for the step and freed with it (attendCached). What the
// debugger edits follows: c_kv at
// kv_a_layernorm and k_pe at rotary_emb go into the cache and every later
// step; k_nope and v at kv_b_proj change the step's own keys and values
// only, as later steps expand the cached latent again.

// mlaKV is a step's keys k [ctx, nh·qk_head_dim] and values v [ctx,
// nh·v_head_dim] over the context of its sequences, each sequence's rows
// contiguous (position p of the sequence whose first row is b at row
// b+p; attendCached starts sequence s at s times the longest context, so
// rows past a shorter sequence's context are never written or read):
// temporaries of the layer, freed once its sites are visited. step
// holds the rows of the step's own tokens in token order, nil when they
// are all of k and v in that order (a plain prefill).
//
// A plain prefill whose attention read kv_b_proj's output in place
// (Device.MLAAttention) has no k and v until a site asks for them: then
// they are written out from kv and kPe (lazy holds the arguments).
type mlaKV struct {
	k, v backend.Tensor
	step []int32
	lazy *mlaLazy
}

// mlaLazy is what a plain prefill's k and v are made from when a site
// asks: kv_b_proj's output kv [tokens, nh·(qk_nope+v)] and kPe [tokens,
// qk_rope], in token order.
type mlaLazy struct {
	kv, kPe backend.Tensor
	args    backend.MLAKVArgs
}

// stepRows returns the step's rows of k and v ([tokens, nh·qk] and
// [tokens, nh·v]), what the sites show as k and v.
func (c *mlaKV) stepRows(dev backend.Device) (k, v backend.Tensor) {
	if l := c.lazy; l != nil && c.k == nil {
		T := l.kv.Shape()[0]
		c.k, c.v = dev.Alloc(T, l.args.Heads*(l.args.Nope+l.args.Rope)), dev.Alloc(T, l.args.Heads*l.args.V)
		dev.WriteMLAKV(c.k, c.v, l.kv, l.kPe, &l.args)
	}
	if c.step == nil {
		return c.k, c.v
	}
	return dev.GatherRows(c.k, c.step), dev.GatherRows(c.v, c.step)
}

// free releases k and v (when they were made).
func (c *mlaKV) free(dev backend.Device) {
	if c.k != nil {
		dev.Free(c.k)
		dev.Free(c.v)
	}
}

// storeLatent writes the step's latent rows [c_kv | k_pe] (cKV [tokens,
// kv_lora_rank], kPe [tokens, qk_rope_head_dim]) at their (slot, position)
// rows of the layer's cache, a cache of one tensor [slots·capacity,
// kv_lora_rank + qk_rope_head_dim].
func (a *MLA) storeLatent(dev backend.Device, cache *model.KVCache, b *model.Batch, cKV, kPe backend.Tensor) {
	rows, _, _ := cache.Place(dev, b, a.c.KVLora+a.c.Rope, 0)
	lat := dev.ConcatCols(cKV, kPe)
	dev.WriteRows(cache.K, lat, rows)
	dev.Free(lat)
}

// plainPrefill reports whether every sequence of b holds positions 0, 1,
// ... of its step tokens in order: the context of each is exactly its
// tokens in the step, and nothing cached is read.
func plainPrefill(b *model.Batch) bool {
	t := 0
	for _, n := range b.SeqLens {
		for p := range n {
			if int(b.Pos[t]) != p {
				return false
			}
			t++
		}
	}
	return true
}

// attend runs the attention of q [tokens, nh·qk] over c with each token's
// first context row base (AttnArgs.Base; Pos is the batch's), applying
// FaultChunkNoContext when it is injected at the module. Out: [tokens,
// nh·v].
func (a *MLA) attend(r *model.Rank, b *model.Batch, q backend.Tensor, c mlaKV, base []int32) backend.Tensor {
	pos := b.Pos
	if f, ok := r.Fault(model.FaultChunkNoContext, a.site); ok {
		base, pos = model.ChunkAttention(base, pos, f.Token)
	}
	return r.Dev.Attention(q, c.k, c.v, &backend.AttnArgs{Heads: a.nh, KVHeads: a.nh, DK: a.c.QK(), DV: a.c.V, Scale: a.c.Scale,
		Base: base, Pos: pos})
}

// attendPrefill is the attention of a plain prefill (plainPrefill): the
// context's keys and values are the step's own, from kv [tokens,
// nh·(qk_nope+v)] (kv_b_proj's output, per head [k_nope | v]) and kPe
// [tokens, qk_rope] in token order, each sequence's first row its first
// token, and Device.MLAAttention reads them there (the CUDA backend's
// kernels/flash_wgmma.cu with no per-head copy; others write one out).
// It returns the attention output [tokens, nh·v] and the keys and values,
// made only if a site asks (mlaKV.lazy).
func (a *MLA) attendPrefill(r *model.Rank, b *model.Batch, q, kv, kPe backend.Tensor) (backend.Tensor, mlaKV) {
	c, T := a.c, b.Tokens()
	rows, base := make([]int32, T), make([]int32, T)
	for t, p := range b.Pos {
		rows[t], base[t] = int32(t), int32(t)-p // position p of a sequence starting at row t-p
	}
	pos := b.Pos
	if f, ok := r.Fault(model.FaultChunkNoContext, a.site); ok {
		base, pos = model.ChunkAttention(base, pos, f.Token)
	}
	o := r.Dev.MLAAttention(q, kv, kPe, &backend.MLAAttnArgs{Heads: a.nh, Nope: c.Nope, Rope: c.Rope, V: c.V, Scale: c.Scale,
		Base: base, Pos: pos})
	return o, mlaKV{lazy: &mlaLazy{kv: kv, kPe: kPe, args: backend.MLAKVArgs{Heads: a.nh, Nope: c.Nope, Rope: c.Rope, V: c.V, Rows: rows}}}
}

// attendCached is the attention of any other step (decode, or a sequence
// continued from a cached prefix): each sequence's context is its
// positions 0 .. its last position in the step; the step's tokens take
// their keys and values from kv and kPe (as attendPrefill), the positions
// before them from kv_b_proj applied to the cached latent rows (the
// rank's shard of the same weight; no site: the kv_b_proj site showed the
// step's tokens). It returns the attention output [tokens, nh·v] and the
// keys and values.
func (a *MLA) attendCached(r *model.Rank, b *model.Batch, q, kv, kPe backend.Tensor) (backend.Tensor, mlaKV) {
	dev, c, T := r.Dev, a.c, b.Tokens()
	cache := r.KV.Layers[a.layer]
	seq := b.SeqOf()
	ctxLen := make([]int, len(b.SeqLens))
	for t, p := range b.Pos {
		ctxLen[seq[t]] = max(ctxLen[seq[t]], int(p)+1)
	}
	// Each sequence's context starts at a multiple of the longest, so the
	// rows read as [sequences, longest] slots (the CUDA backend's decode
	// kernels address keys by slot and position).
	stride := 0
	for _, n := range ctxLen {
		stride = max(stride, n)
	}
	first := make([]int, len(b.SeqLens)) // each sequence's first context row
	for s := range ctxLen {
		first[s] = s * stride
	}
	rowsCtx := len(ctxLen) * stride
	step, base := make([]int32, T), make([]int32, T)
	fresh := make([]bool, rowsCtx)
	for t, p := range b.Pos {
		base[t] = int32(first[seq[t]])
		step[t] = base[t] + p
		fresh[step[t]] = true
	}
	var dst, src []int32 // context rows of cached positions, and their cache rows
	for s, n := range ctxLen {
		for p := range n {
			if !fresh[first[s]+p] {
				dst = append(dst, int32(first[s]+p))
				src = append(src, cache.Row(b.Slots[s], p))
			}
		}
	}
	ctx := mlaKV{k: dev.Alloc(rowsCtx, a.nh*c.QK()), v: dev.Alloc(rowsCtx, a.nh*c.V), step: step}
	args := backend.MLAKVArgs{Heads: a.nh, Nope: c.Nope, Rope: c.Rope, V: c.V}
	if len(src) > 0 {
		lat := dev.GatherRows(cache.K, src) // [cached, kv_lora_rank + qk_rope]
		cKV, pe := dev.SliceCols(lat, 0, c.KVLora), dev.SliceCols(lat, c.KVLora, c.KVLora+c.Rope)
		dev.Free(lat)
		old := a.kvb.Apply(dev, cKV) // [cached, nh·(qk_nope+v)]
		dev.Free(cKV)
		args.Rows = dst
		dev.WriteMLAKV(ctx.k, ctx.v, old, pe, &args)
		dev.Free(old)
		dev.Free(pe)
	}
	args.Rows = step
	dev.WriteMLAKV(ctx.k, ctx.v, kv, kPe, &args)
	return a.attend(r, b, q, ctx, base), ctx
}
