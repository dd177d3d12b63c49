package arch

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1; HF
// modeling_deepseek_v3.py DeepseekV3Attention, modeling_deepseek_v2.py
// DeepseekV2Attention; vLLM deepseek_v2.py DeepseekV2MLAAttention):
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
// all-reduce. The KV cache holds the expanded per-head k and v, as HF's
// cache does (vLLM caches the latent; the attention output is the same).

// mlaDims are the sizes and rules of one model's MLA.
type mlaDims struct {
	hidden, heads    int
	qLora            int // q_lora_rank; 0 when the model uses q_proj (DeepSeek-V2-Lite)
	kvLora           int // kv_lora_rank
	nope, rope, vdim int // qk_nope_head_dim, qk_rope_head_dim, v_head_dim
	eps              float32
	interleaved      bool      // RoPE on adjacent pairs (rope_interleave; always for V2)
	scale            float32   // softmax scale: qk_head_dim^-0.5 · mscale(factor, mscale_all_dim)²
	invFreq          []float32 // [qk_rope/2]
	mscale           float32   // YaRN attention factor on cos and sin
	ropeClass        string    // vLLM rotary class
	attnClass        string    // vLLM attention module class
}

func (d *mlaDims) qk() int { return d.nope + d.rope }

// headRange returns rank's attention heads [start, end).
func (d *mlaDims) headRange(rank, world int) [2]int { return model.Even(d.heads, world, rank) }

// addMLA adds self_attn with its children and parameters under layer.
func addMLA(layer *model.Module, d *mlaDims, world int) *model.Module {
	H, qk := d.hidden, d.qk()
	hr := make([][2]int, world)
	for r := range world {
		hr[r] = d.headRange(r, world)
	}
	scaled := func(w int) [][2]int {
		out := make([][2]int, world)
		for r, h := range hr {
			out[r] = model.Scaled(h, w)
		}
		return out
	}
	a := layer.Add("self_attn", d.attnClass, "input", "q", "c_kv", "k_pe", "k", "v", "attn_out", "output")
	if d.qLora > 0 {
		f := a.Add("fused_qkv_a_proj", "MergedColumnParallelLinear", "input", "q_c", "kv_c", "k_pe")
		f.Params = append(f.Params,
			model.Param{Name: a.Path + ".q_a_proj.weight", Shape: []int{d.qLora, H}, Dim: -1},
			model.Param{Name: a.Path + ".kv_a_proj_with_mqa.weight", Shape: []int{d.kvLora + d.rope, H}, Dim: -1})
		a.Add("q_a_layernorm", "RMSNorm", "input", "output").Param("weight", []int{d.qLora}, -1, nil)
		a.Add("q_b_proj", "ColumnParallelLinear", "input", "q").Param("weight", []int{d.heads * qk, d.qLora}, 0, scaled(qk))
	} else {
		a.Add("q_proj", "ColumnParallelLinear", "input", "q").Param("weight", []int{d.heads * qk, H}, 0, scaled(qk))
		a.Add("kv_a_proj_with_mqa", "ReplicatedLinear", "input", "kv_c", "k_pe").Param("weight", []int{d.kvLora + d.rope, H}, -1, nil)
	}
	a.Add("kv_a_layernorm", "RMSNorm", "input", "c_kv").Param("weight", []int{d.kvLora}, -1, nil)
	a.Add("kv_b_proj", "ColumnParallelLinear", "input", "k_nope", "v").Param("weight", []int{d.heads * (d.nope + d.vdim), d.kvLora}, 0, scaled(d.nope+d.vdim))
	a.Add("rotary_emb", d.ropeClass, "q_pe", "k_pe")
	a.Add("attn", "Attention", "q", "k", "v", "attn_out")
	a.Add("o_proj", "RowParallelLinear", "input", "partial", "output").Param("weight", []int{H, d.heads * d.vdim}, 1, scaled(d.vdim))
	return a
}

// mlaLayer is one rank's share of one layer's MLA.
type mlaLayer struct {
	d       *mlaDims
	heads   [2]int         // this rank's heads
	wqa     backend.Tensor // q_a_proj [q_lora_rank, hidden] (replicated), or nil
	qaNorm  backend.Tensor // [q_lora_rank]
	wqb     backend.Tensor // q_b_proj rows of this rank's heads [heads_r·qk, q_lora_rank]
	wq      backend.Tensor // q_proj rows [heads_r·qk, hidden] when q_lora_rank is null
	wkva    backend.Tensor // kv_a_proj_with_mqa [kv_lora_rank+qk_rope, hidden] (replicated)
	kvaNorm backend.Tensor // [kv_lora_rank]
	wkvb    backend.Tensor // kv_b_proj rows [heads_r·(qk_nope+v), kv_lora_rank]
	wo      backend.Tensor // o_proj columns [hidden, heads_r·v]

	site, fused, qaN, qb, qp, kva, kvaN, kvb, rope, core, o *model.Site
}

// loadMLA loads rank l.Rank's share of the attention whose weights are under
// l's prefix ("...layers.N.self_attn") and whose tree module is at path.
func loadMLA(l *model.Loader, t *model.Tree, path string, d *mlaDims) *mlaLayer {
	H, qk := d.hidden, d.qk()
	L := &mlaLayer{d: d, heads: d.headRange(l.Rank, l.World)}
	rows := func(w int) [2]int { return model.Scaled(L.heads, w) }
	if d.qLora > 0 {
		L.wqa = l.Linear("q_a_proj.weight", d.qLora, H, [2]int{0, d.qLora}, [2]int{0, H})
		L.qaNorm = l.Full("q_a_layernorm.weight", d.qLora)
		r := rows(qk)
		L.wqb = l.Linear("q_b_proj.weight", d.heads*qk, d.qLora, r, [2]int{0, d.qLora})
	} else {
		r := rows(qk)
		L.wq = l.Linear("q_proj.weight", d.heads*qk, H, r, [2]int{0, H})
	}
	L.wkva = l.Linear("kv_a_proj_with_mqa.weight", d.kvLora+d.rope, H, [2]int{0, d.kvLora + d.rope}, [2]int{0, H})
	L.kvaNorm = l.Full("kv_a_layernorm.weight", d.kvLora)
	r := rows(d.nope + d.vdim)
	L.wkvb = l.Linear("kv_b_proj.weight", d.heads*(d.nope+d.vdim), d.kvLora, r, [2]int{0, d.kvLora})
	c := rows(d.vdim)
	L.wo = l.Linear("o_proj.weight", H, d.heads*d.vdim, [2]int{0, H}, c)
	s := func(n string) *model.Site { return t.Site(path + "." + n) }
	L.site, L.fused, L.qaN, L.qb, L.qp = t.Site(path), s("fused_qkv_a_proj"), s("q_a_layernorm"), s("q_b_proj"), s("q_proj")
	L.kva, L.kvaN, L.kvb, L.rope, L.core, L.o = s("kv_a_proj_with_mqa"), s("kv_a_layernorm"), s("kv_b_proj"), s("rotary_emb"), s("attn"), s("o_proj")
	return L
}

// forward runs decoder layer `layer`'s attention on x [tokens, hidden]
// (replicated) and returns the all-reduced output [tokens, hidden].
func (L *mlaLayer) forward(r *model.Rank, b *model.Batch, layer int, x backend.Tensor) backend.Tensor {
	dev, d := r.Dev, L.d
	T, nh, qk := b.Tokens(), L.heads[1]-L.heads[0], d.qk()
	qShard := shard(model.Scaled(L.heads, qk), d.heads*qk)
	vShard := shard(model.Scaled(L.heads, d.vdim), d.heads*d.vdim)
	r.Enter(L.site, x)

	var q, kvA backend.Tensor
	if d.qLora > 0 {
		qc := dev.Linear(x, L.wqa, nil)
		kvA = dev.Linear(x, L.wkva, nil)
		r.Leaf(L.fused, x, func() []model.SiteTensor {
			return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "q_c", T: qc, Shard: rep(qc)},
				{Name: "kv_c", T: dev.SliceCols(kvA, 0, d.kvLora), Shard: rep(kvA)}, {Name: "k_pe", T: dev.SliceCols(kvA, d.kvLora, d.kvLora+d.rope), Shard: rep(kvA)}}
		})
		qn := dev.RMSNorm(qc, L.qaNorm, d.eps)
		r.Leaf(L.qaN, qc, func() []model.SiteTensor {
			return []model.SiteTensor{{Name: "input", T: qc, Shard: rep(qc)}, {Name: "output", T: qn, Shard: rep(qn)}}
		})
		q = dev.Linear(qn, L.wqb, nil)
		r.Leaf(L.qb, qn, func() []model.SiteTensor {
			return []model.SiteTensor{{Name: "input", T: qn, Shard: rep(qn)}, {Name: "q", T: q, Shard: qShard}}
		})
	} else {
		q = dev.Linear(x, L.wq, nil)
		r.Leaf(L.qp, x, func() []model.SiteTensor {
			return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "q", T: q, Shard: qShard}}
		})
		kvA = dev.Linear(x, L.wkva, nil)
		r.Leaf(L.kva, x, func() []model.SiteTensor {
			return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)},
				{Name: "kv_c", T: dev.SliceCols(kvA, 0, d.kvLora), Shard: rep(kvA)}, {Name: "k_pe", T: dev.SliceCols(kvA, d.kvLora, d.kvLora+d.rope), Shard: rep(kvA)}}
		})
	}

	kvC := dev.SliceCols(kvA, 0, d.kvLora)
	kPe := dev.SliceCols(kvA, d.kvLora, d.kvLora+d.rope)
	cKV := dev.RMSNorm(kvC, L.kvaNorm, d.eps)
	r.Leaf(L.kvaN, kvC, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: kvC, Shard: rep(kvC)}, {Name: "c_kv", T: cKV, Shard: rep(cKV)}}
	})

	kv := dev.Reshape(dev.Linear(cKV, L.wkvb, nil), T*nh, d.nope+d.vdim)
	kNope := dev.SliceCols(kv, 0, d.nope)                                    // [T·nh, nope]
	v := dev.Reshape(dev.SliceCols(kv, d.nope, d.nope+d.vdim), T, nh*d.vdim) // [T, nh·v]
	r.Leaf(L.kvb, cKV, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: cKV, Shard: rep(cKV)},
			{Name: "k_nope", T: dev.Reshape(kNope, T, nh*d.nope), Shard: shard(model.Scaled(L.heads, d.nope), d.heads*d.nope)}, {Name: "v", T: v, Shard: vShard}}
	})

	q3 := dev.Reshape(q, T*nh, qk)
	qNope := dev.SliceCols(q3, 0, d.nope)
	qPe := dev.Reshape(dev.SliceCols(q3, d.nope, qk), T, nh*d.rope)
	qPe = dev.RoPE(qPe, &backend.RoPEArgs{Heads: nh, HeadDim: d.rope, Pos: b.Pos, InvFreq: d.invFreq, MScale: d.mscale, Interleaved: d.interleaved})
	kPe = dev.RoPE(kPe, &backend.RoPEArgs{Heads: 1, HeadDim: d.rope, Pos: b.Pos, InvFreq: d.invFreq, MScale: d.mscale, Interleaved: d.interleaved})
	r.Leaf(L.rope, qPe, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "q_pe", T: qPe, Shard: shard(model.Scaled(L.heads, d.rope), d.heads*d.rope)}, {Name: "k_pe", T: kPe, Shard: rep(kPe)}}
	})

	qFull := dev.Reshape(dev.ConcatCols(qNope, dev.Reshape(qPe, T*nh, d.rope)), T, nh*qk)
	bcast := make([]int32, T*nh) // row t·nh+h of the per-head layout takes token t's shared k_pe
	for i := range bcast {
		bcast[i] = int32(i / nh)
	}
	kFull := dev.Reshape(dev.ConcatCols(kNope, dev.GatherRows(kPe, bcast)), T, nh*qk)

	cache := r.KV.Layers[layer]
	base, pos := cache.Store(dev, b, kFull, v)
	o := dev.Attention(qFull, cache.K, cache.V, &backend.AttnArgs{Heads: nh, KVHeads: nh, DK: qk, DV: d.vdim, Scale: d.scale, Base: base, Pos: pos})
	r.Leaf(L.core, qFull, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "q", T: qFull, Shard: qShard}, {Name: "k", T: kFull, Shard: qShard}, {Name: "v", T: v, Shard: vShard}, {Name: "attn_out", T: o, Shard: vShard}}
	})

	p := dev.Linear(o, L.wo, nil)
	out := r.Comm.AllReduceSum(p)
	r.Leaf(L.o, o, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: o, Shard: vShard}, {Name: "partial", T: p, Shard: partial}, {Name: "output", T: out, Shard: rep(out)}}
	})
	r.Exit(L.site, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "q", T: qFull, Shard: qShard}, {Name: "c_kv", T: cKV, Shard: rep(cKV)},
			{Name: "k_pe", T: kPe, Shard: rep(kPe)}, {Name: "k", T: kFull, Shard: qShard}, {Name: "v", T: v, Shard: vShard},
			{Name: "attn_out", T: o, Shard: vShard}, {Name: "output", T: out, Shard: rep(out)}}
	})
	return out
}
