package nn

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// MLA is one rank's share of multi-head latent attention (DeepSeek-V2,
// arXiv:2405.04434 §2.1; HF modeling_deepseek_v3.py DeepseekV3Attention,
// modeling_deepseek_v2.py DeepseekV2Attention; vLLM deepseek_v2.py
// DeepseekV2MLAAttention):
//
//	q      = q_b_proj(q_a_layernorm(q_a_proj(x)))   or q_proj(x) without q_lora_rank
//	         [tokens, heads·(qk_nope+qk_rope)], per head [q_nope | q_pe]
//	kv_a   = kv_a_proj_with_mqa(x) = [kv_c | k_pe]   [tokens, kv_lora_rank + qk_rope]
//	c_kv   = kv_a_layernorm(kv_c)                    [tokens, kv_lora_rank], the latent
//	kv     = kv_b_proj(c_kv)                         per head [k_nope | v]
//	q_pe, k_pe rotated by RoPE (k_pe is one head shared by all heads)
//	k      = per head [k_nope | k_pe]
//	out    = o_proj(softmax(q·kᵀ·scale)·v)
//
// Split as vLLM splits it: q_a_proj and kv_a_proj_with_mqa replicated (vLLM
// fuses them into fused_qkv_a_proj with disable_tp), q_b_proj / q_proj and
// kv_b_proj column-parallel by heads, o_proj row-parallel with an
// all-reduce. The KV cache holds the latent [c_kv | k_pe], kv_lora_rank +
// qk_rope_head_dim values per token on every rank, as vLLM's
// MLACommonBackend caches it; each step expands its context's keys and
// values from it (mla_context.go).
type MLA struct {
	c          *MLAConfig
	site       *model.Site
	fused      *Linear // fused_qkv_a_proj [q_c | kv_c | k_pe] (q_lora_rank), or nil
	kva        *Linear // kv_a_proj_with_mqa [kv_c | k_pe] without q_lora_rank
	qaNorm     *RMSNorm
	q          *Linear // q_b_proj, or q_proj without q_lora_rank
	kvaNorm    *RMSNorm
	kvb        *Linear // kv_b_proj [k_nope | v] per head
	rope, core *model.Site
	o          *RowLinear
	nh, layer  int // this rank's heads; the decoder layer (KV cache slot)
	qLab, vLab model.Sharding
	qPeLab     model.Sharding
	geom       model.AttnGeometry // for the debugger's attention probabilities
}

// MLAConfig is one model's MLA: sizes as config.json names them and the
// rules derived from it.
type MLAConfig struct {
	Class, RopeClass string // vLLM classes of self_attn and rotary_emb
	Hidden, Heads    int
	QLora            int // q_lora_rank; 0 when the model uses q_proj (DeepSeek-V2-Lite)
	KVLora           int // kv_lora_rank
	Nope, Rope, V    int // qk_nope_head_dim, qk_rope_head_dim, v_head_dim
	Eps              float64
	Interleaved      bool      // RoPE on adjacent pairs (rope_interleave; always for V2)
	Scale            float32   // softmax scale: qk_head_dim^-0.5 · mscale(factor, mscale_all_dim)²
	InvFreq          []float32 // [qk_rope/2]
	MScale           float32   // YaRN attention factor on cos and sin
}

// QK returns qk_head_dim = qk_nope_head_dim + qk_rope_head_dim.
func (c *MLAConfig) QK() int { return c.Nope + c.Rope }

// NewMLA declares the attention at b (the layer's "self_attn") of decoder
// layer `layer` (its KV cache slot). The heads must divide over b's ranks
// (the config validated it).
func NewMLA(b Builder, c *MLAConfig, layer int) *MLA {
	ab := b.Module(c.Class, "input", "q", "c_kv", "k_pe", "k", "v", "attn_out", "output")
	H, qk, rank := c.Hidden, c.QK(), b.Rank()
	hs := Even(b, c.Heads, 1)
	h := hs.Local(rank)
	a := &MLA{c: c, site: ab.Site(), nh: h[1] - h[0], layer: layer,
		qLab: hs.Label(rank, qk), vLab: hs.Label(rank, c.V), qPeLab: hs.Label(rank, c.Rope)}
	heads := func(w int) Split { return Split{Units: c.Heads, Width: w, Ranges: hs.Ranges} }
	kvA := []Part{P("kv_c", c.KVLora), P("k_pe", c.Rope)}
	if c.QLora > 0 {
		a.fused = NewMerged(ab, "fused_qkv_a_proj", "MergedColumnParallelLinear", H,
			O("q_a_proj", Replicated(1, c.QLora), P("q_c", c.QLora)), O("kv_a_proj_with_mqa", Replicated(1, c.KVLora+c.Rope), kvA...))
		a.qaNorm = NewRMSNorm(ab.Pp("q_a_layernorm"), c.QLora, c.Eps, "input", "output")
		a.q = NewColumnParallel(ab.Pp("q_b_proj"), c.QLora, heads(qk), false, P("q", qk))
	} else {
		a.q = NewColumnParallel(ab.Pp("q_proj"), H, heads(qk), false, P("q", qk))
		a.kva = NewReplicatedLinear(ab.Pp("kv_a_proj_with_mqa"), H, c.KVLora+c.Rope, kvA...)
	}
	a.kvaNorm = NewRMSNorm(ab.Pp("kv_a_layernorm"), c.KVLora, c.Eps, "input", "c_kv")
	a.kvb = NewColumnParallel(ab.Pp("kv_b_proj"), c.KVLora, heads(c.Nope+c.V), false, P("k_nope", c.Nope), P("v", c.V))
	a.rope = ab.Pp("rotary_emb").Module(c.RopeClass, "q_pe", "k_pe").Site()
	a.core = ab.Pp("attn").Module("Attention", "q", "k", "v", "attn_out").Site()
	a.o = NewRowParallel(ab.Pp("o_proj"), heads(c.V), H, false, true)
	a.geom = model.AttnGeometry{Key: "k", Heads: a.nh, KVHeads: a.nh, DK: qk, FirstHead: h[0], FirstKVHead: h[0],
		TotalHeads: c.Heads, TotalKVHeads: c.Heads, Scale: c.Scale}
	return a
}

// Forward runs the attention on x [tokens, hidden] (replicated) and returns
// the all-reduced output [tokens, hidden].
func (a *MLA) Forward(r *model.Rank, b *model.Batch, x backend.Tensor) backend.Tensor {
	dev, c := r.Dev, a.c
	T, nh, qk := b.Tokens(), a.nh, c.QK()
	r.Enter(a.site, x)

	var q, kvC, kPe backend.Tensor
	if a.fused != nil {
		f := a.fused.Forward(r, x) // q_c, kv_c, k_pe
		q = a.q.Forward1(r, a.qaNorm.Forward(r, f[0]))
		kvC, kPe = f[1], f[2]
	} else {
		q = a.q.Forward1(r, x)
		f := a.kva.Forward(r, x)
		kvC, kPe = f[0], f[1]
	}
	cKV := a.kvaNorm.Forward(r, kvC)
	kv := a.kvb.ForwardJoined(r, cKV) // [T, nh·(nope+v)], per head [k_nope | v]

	// q is per head [q_nope | q_pe]: rotating its q_pe columns in place
	// makes it the attention's query [T, nh·qk]; k_pe is one shared head.
	rope := func(heads, stride, off int) *backend.RoPEArgs {
		return &backend.RoPEArgs{Heads: heads, HeadDim: c.Rope, Stride: stride, Offset: off, Pos: b.Pos, InvFreq: c.InvFreq,
			MScale: c.MScale, Interleaved: c.Interleaved}
	}
	dev.RoPEInPlace(q, rope(nh, qk, c.Nope))
	kPe = dev.RoPE(kPe, rope(1, c.Rope, 0))
	var qPe backend.Tensor // made only when the rope site is visited
	r.Leaf(a.rope, q, func() []model.SiteTensor {
		qPe = dev.Reshape(dev.SliceCols(dev.Reshape(q, T*nh, qk), c.Nope, qk), T, nh*c.Rope)
		return []model.SiteTensor{{Name: "q_pe", T: qPe, Shard: a.qPeLab, Writable: true}, {Name: "k_pe", T: kPe, Shard: Rep, Writable: true}}
	})
	if qPe != nil { // q_pe as the hook left it goes on
		q3 := dev.Reshape(q, T*nh, qk)
		q = dev.Reshape(dev.ConcatCols(dev.SliceCols(q3, 0, c.Nope), dev.Reshape(qPe, T*nh, c.Rope)), T, nh*qk)
	}

	// The cache keeps the latent; the attention reads kv_b_proj's output
	// over the step's context (mla_context.go).
	a.storeLatent(dev, r.KV.Layers[a.layer], b, cKV, kPe)
	var o backend.Tensor
	var ctx mlaKV
	if plainPrefill(b) {
		o, ctx = a.attendPrefill(r, b, q, kv, kPe)
	} else {
		o, ctx = a.attendCached(r, b, q, kv, kPe)
	}
	// The sites' k [T, nh·qk] and v [T, nh·v]: the step's rows of the
	// context's keys and values, made only when a site is visited.
	var k, v backend.Tensor
	kvRows := func() {
		if k == nil {
			k, v = ctx.stepRows(dev)
		}
	}
	r.Leaf(a.core, q, func() []model.SiteTensor {
		kvRows()
		return []model.SiteTensor{{Name: "q", T: q, Shard: a.qLab, Attn: &a.geom}, {Name: "k", T: k, Shard: a.qLab}, {Name: "v", T: v, Shard: a.vLab}, {Name: "attn_out", T: o, Shard: a.vLab, Writable: true}}
	})

	out := a.o.Forward(r, o)
	r.Exit(a.site, func() []model.SiteTensor {
		kvRows()
		return []model.SiteTensor{{Name: "input", T: x, Shard: Rep}, {Name: "q", T: q, Shard: a.qLab, Attn: &a.geom}, {Name: "c_kv", T: cKV, Shard: Rep},
			{Name: "k_pe", T: kPe, Shard: Rep}, {Name: "k", T: k, Shard: a.qLab}, {Name: "v", T: v, Shard: a.vLab},
			{Name: "attn_out", T: o, Shard: a.vLab}, {Name: "output", T: out, Shard: Rep, Writable: true}}
	})
	ctx.free(dev)
	return out
}
