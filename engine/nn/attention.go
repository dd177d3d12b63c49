package nn

import (
	"math"

	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// Attention is one rank's share of grouped-query self-attention as vLLM's
// LlamaAttention computes it (HF LlamaAttention; Qwen2's q/k/v bias, Qwen3's
// per-head q_norm and k_norm, Mistral's sliding window): qkv_proj
// (QKVParallelLinear, heads split over ranks, kv heads replicated when fewer
// than ranks) → (q_norm, k_norm) → rotary_emb → attention over the KV cache
// → o_proj (RowParallelLinear with its all-reduce).
type Attention struct {
	site          *model.Site
	qkv           *Linear
	qNorm, kNorm  *RMSNorm // Qwen3, or nil
	rope, core    *model.Site
	o             *RowLinear
	q, kv         Split // heads of this model over the ranks
	nq, nkv, hd   int   // this rank's heads, head_dim
	qLab, kvLab   model.Sharding
	layer, window int
	invFreq       []float32
	mscale        float32
	geom          model.AttnGeometry // for the debugger's attention probabilities
	// args holds the RoPE and attention arguments so that a step does not
	// allocate them (one rank runs on one goroutine).
	args struct {
		rope backend.RoPEArgs
		attn backend.AttnArgs
	}
}

// AttentionConfig is what declares an Attention.
type AttentionConfig struct {
	Class                           string // vLLM class: "LlamaAttention"
	Hidden, Heads, KVHeads, HeadDim int
	QKVBias, OBias                  bool    // biases on q/k/v_proj, on o_proj
	QKNorm                          bool    // Qwen3's q_norm and k_norm [head_dim]
	Eps                             float64 // of q_norm and k_norm
	Layer                           int     // decoder layer index: the KV cache slot
	Window                          int     // sliding window (0: none)
	InvFreq                         []float32
	MScale                          float32
}

// NewAttention declares self-attention at b (the layer's "self_attn"). The
// heads must split over b's ranks (model.PlanHeads; the config validated
// it).
func NewAttention(b Builder, c AttentionConfig) *Attention {
	plan, _ := model.PlanHeads(c.Heads, c.KVHeads, b.World())
	ab := b.Module(c.Class, "input", "output")
	hd, rank := c.HeadDim, b.Rank()
	a := &Attention{site: ab.Site(), hd: hd, layer: c.Layer, window: c.Window, invFreq: c.InvFreq, mscale: c.MScale,
		q: Heads(b, c.Heads, hd, plan.Q), kv: Heads(b, c.KVHeads, hd, plan.KV), nq: plan.QPerRank, nkv: plan.KVPerRank}
	a.qLab, a.kvLab = a.q.Label(rank, hd), a.kv.Label(rank, hd)
	a.qkv = NewQKVParallel(ab, "qkv_proj", c.Hidden, a.q, a.kv, c.QKVBias)
	if c.QKNorm {
		a.qNorm = NewRMSNorm(ab.Pp("q_norm"), hd, c.Eps, "", "q")
		a.kNorm = NewRMSNorm(ab.Pp("k_norm"), hd, c.Eps, "", "k")
	}
	a.rope = ab.Pp("rotary_emb").Module("RotaryEmbedding", "q", "k").Site()
	a.core = ab.Pp("attn").Module("Attention", "q", "k", "attn_out").Site()
	a.geom = model.AttnGeometry{Key: "k", Heads: a.nq, KVHeads: a.nkv, DK: hd, FirstHead: a.qLab.Start / hd, FirstKVHead: a.kvLab.Start / hd,
		TotalHeads: c.Heads, TotalKVHeads: c.KVHeads, Scale: float32(1 / math.Sqrt(float64(hd))), Window: c.Window}
	a.o = NewRowParallel(ab.Pp("o_proj"), a.q, c.Hidden, c.OBias, true)
	return a
}

// Forward runs attention on x [tokens, hidden] (replicated) for batch b and
// returns the all-reduced output [tokens, hidden].
func (a *Attention) Forward(r *model.Rank, b *model.Batch, x backend.Tensor) backend.Tensor {
	dev := r.Dev
	r.Enter(a.site, x)
	qkv := a.qkv.Forward(r, x)
	q, k, v := qkv[0], qkv[1], qkv[2]
	if a.qNorm != nil {
		q = a.qNorm.Heads(r, q, a.nq, a.qLab)
		k = a.kNorm.Heads(r, k, a.nkv, a.kvLab)
	}
	args := &a.args // reused: the arguments escape to the device interface
	args.rope = backend.RoPEArgs{Heads: a.nq, HeadDim: a.hd, Pos: b.Pos, InvFreq: a.invFreq, MScale: a.mscale}
	q = dev.RoPE(q, &args.rope)
	args.rope.Heads = a.nkv
	k = dev.RoPE(k, &args.rope)
	r.Leaf(a.rope, q, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "q", T: q, Shard: a.qLab, Writable: true, Attn: &a.geom}, {Name: "k", T: k, Shard: a.kvLab, Writable: true}}
	})
	kv := r.KV.Layers[a.layer]
	base, pos := kv.Store(dev, b, k, v)
	if f, ok := r.Fault(model.FaultChunkNoContext, a.site); ok {
		base, pos = model.ChunkAttention(base, pos, f.Token)
	}
	args.attn = backend.AttnArgs{Heads: a.nq, KVHeads: a.nkv, DK: a.hd, DV: a.hd, Scale: float32(1 / math.Sqrt(float64(a.hd))), Window: a.window, Base: base, Pos: pos}
	o := dev.Attention(q, kv.K, kv.V, &args.attn)
	r.Leaf(a.core, q, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "q", T: q, Shard: a.qLab, Attn: &a.geom}, {Name: "k", T: k, Shard: a.kvLab}, {Name: "attn_out", T: o, Shard: a.qLab, Writable: true}}
	})
	out := a.o.Forward(r, o)
	r.Exit(a.site, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: Rep}, {Name: "output", T: out, Shard: Rep, Writable: true}}
	})
	return out
}
