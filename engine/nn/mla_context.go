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
// every step: the attention (Device.MLAAttention) runs over kv_b_proj's
// output for the step's context, [ctx, nh·(qk_nope + v_head_dim)], and
// the context's k_pe [ctx, qk_rope_head_dim], made for the step and freed
// with it (a plain prefill's are the step's own); the CUDA backend reads
// them in place, other devices write per-head keys and values out first.
// What the debugger edits follows: c_kv at kv_a_layernorm and k_pe at
// rotary_emb go into the cache and every later step; k_nope and v at
// kv_b_proj change the step's own keys and values only, as later steps
// expand the cached latent again.

// mlaKV is what a step's attention reads and what its k and v sites
// show: kv [rows, nh·(qk_nope+v)] (kv_b_proj's output over the context,
// per head [k_nope | v]) and kPe [rows, qk_rope] in the context's layout
// (position p of the sequence whose first row is b at row b+p), and step,
// the rows of the step's own tokens in token order. The per-head keys k
// [tokens, nh·qk_head_dim] and values v [tokens, nh·v_head_dim] of the
// step are written out only when a site asks (Device.MLAAttention reads
// kv and kPe where they are). owned: kv and kPe are the layer's
// temporaries (attendCached's), freed with k and v once the layer's sites
// are visited.
type mlaKV struct {
	kv, kPe backend.Tensor
	step    []int32
	owned   bool
	args    backend.MLAKVArgs // heads and head dims (Rows unused)
	k, v    backend.Tensor
}

// stepRows returns the step's per-head keys and values ([tokens, nh·qk]
// and [tokens, nh·v]), what the sites show as k and v, writing them out
// on the first call.
func (c *mlaKV) stepRows(dev backend.Device) (k, v backend.Tensor) {
	if c.k != nil {
		return c.k, c.v
	}
	T := len(c.step)
	kv, kPe := c.kv, c.kPe
	if !identityRows(c.step, kv.Shape()[0]) {
		kv, kPe = dev.GatherRows(c.kv, c.step), dev.GatherRows(c.kPe, c.step)
		defer dev.Free(kv)
		defer dev.Free(kPe)
	}
	args := c.args
	args.Rows = make([]int32, T)
	for i := range args.Rows {
		args.Rows[i] = int32(i)
	}
	c.k, c.v = dev.Alloc(T, args.Heads*(args.Nope+args.Rope)), dev.Alloc(T, args.Heads*args.V)
	dev.WriteMLAKV(c.k, c.v, kv, kPe, &args)
	return c.k, c.v
}

// identityRows reports whether rows are 0, 1, ..., n-1.
func identityRows(rows []int32, n int) bool {
	if len(rows) != n {
		return false
	}
	for i, r := range rows {
		if int(r) != i {
			return false
		}
	}
	return true
}

// free releases k and v (when they were made), and kv and kPe when owned.
func (c *mlaKV) free(dev backend.Device) {
	if c.k != nil {
		dev.Free(c.k)
		dev.Free(c.v)
	}
	if c.owned {
		dev.Free(c.kv)
		dev.Free(c.kPe)
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
// first context row base (MLAAttnArgs.Base; Pos is the batch's), applying
// FaultChunkNoContext when it is injected at the module. Out: [tokens,
// nh·v].
func (a *MLA) attend(r *model.Rank, b *model.Batch, q backend.Tensor, c mlaKV, base []int32) backend.Tensor {
	pos := b.Pos
	if f, ok := r.Fault(model.FaultChunkNoContext, a.site); ok {
		base, pos = model.ChunkAttention(base, pos, f.Token)
	}
	return r.Dev.MLAAttention(q, c.kv, c.kPe, &backend.MLAAttnArgs{Heads: a.nh, Nope: a.c.Nope, Rope: a.c.Rope, V: a.c.V,
		Scale: a.c.Scale, Base: base, Pos: pos})
}

// kvArgs is the layer's WriteMLAKV sizes (no rows).
func (a *MLA) kvArgs() backend.MLAKVArgs {
	return backend.MLAKVArgs{Heads: a.nh, Nope: a.c.Nope, Rope: a.c.Rope, V: a.c.V}
}

// attendPrefill is the attention of a plain prefill (plainPrefill): the
// context's keys and values are the step's own, kv [tokens,
// nh·(qk_nope+v)] (kv_b_proj's output, per head [k_nope | v]) and kPe
// [tokens, qk_rope] in token order, each sequence's first row its first
// token. It returns the attention output [tokens, nh·v] and what it read.
func (a *MLA) attendPrefill(r *model.Rank, b *model.Batch, q, kv, kPe backend.Tensor) (backend.Tensor, mlaKV) {
	T := b.Tokens()
	rows, base := make([]int32, T), make([]int32, T)
	for t, p := range b.Pos {
		rows[t], base[t] = int32(t), int32(t)-p // position p of a sequence starting at row t-p
	}
	ctx := mlaKV{kv: kv, kPe: kPe, step: rows, args: a.kvArgs()}
	return a.attend(r, b, q, ctx, base), ctx
}

// attendCached is the attention of any other step (decode, or a sequence
// continued from a cached prefix): each sequence's context is its
// positions 0 .. its last position in the step, laid out from a multiple
// of the longest context (so the rows read as [sequences, longest] slots,
// as the CUDA backend's decode kernels address them when its fused kernel
// does not run). Every context row's latent is gathered from the cache
// (storeLatent has written the step's own rows) and expanded by kv_b_proj
// (the rank's shard of the same weight; no site: the kv_b_proj site
// showed the step's tokens), then the step's rows take kv_b_proj's output
// kv as its site left it, so an edit there reaches this step's attention.
// Rows past a shorter sequence's context repeat its last position and are
// never read. It returns the attention output [tokens, nh·v] and what it
// read (owned).
func (a *MLA) attendCached(r *model.Rank, b *model.Batch, q, kv, kPe backend.Tensor) (backend.Tensor, mlaKV) {
	dev, c, T := r.Dev, a.c, b.Tokens()
	cache := r.KV.Layers[a.layer]
	seq := b.SeqOf()
	ctxLen := make([]int, len(b.SeqLens))
	for t, p := range b.Pos {
		ctxLen[seq[t]] = max(ctxLen[seq[t]], int(p)+1)
	}
	stride := 0
	for _, n := range ctxLen {
		stride = max(stride, n)
	}
	src := make([]int32, len(ctxLen)*stride) // the cache row of every context row
	for s, n := range ctxLen {
		for p := range stride {
			src[s*stride+p] = cache.Row(b.Slots[s], min(p, n-1))
		}
	}
	step, base := make([]int32, T), make([]int32, T)
	for t, p := range b.Pos {
		base[t] = int32(seq[t] * stride)
		step[t] = base[t] + p
	}
	lat := dev.GatherRows(cache.K, src) // [rows, kv_lora_rank + qk_rope]
	cKV, pe := dev.SliceCols(lat, 0, c.KVLora), dev.SliceCols(lat, c.KVLora, c.KVLora+c.Rope)
	dev.Free(lat)
	kvCtx := a.kvb.Apply(dev, cKV) // [rows, nh·(qk_nope+v)]
	dev.Free(cKV)
	dev.WriteRows(kvCtx, kv, step)
	ctx := mlaKV{kv: kvCtx, kPe: pe, step: step, owned: true, args: a.kvArgs()}
	return a.attend(r, b, q, ctx, base), ctx
}
