package arch

import (
	"encoding/json"
	"fmt"
	"math"

	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Llama-family decoder (HF modeling_llama.py, vLLM model_executor/models/
// llama.py): RMSNorm → attention with RoPE and grouped-query heads → RMSNorm
// → SwiGLU MLP, with vLLM's un-summed (hidden_states, residual) pair and fused
// add + RMSNorm. Mistral, Qwen2 and Qwen3 are this decoder with variant
// switches (see mistral.go, qwen2.go, qwen3.go).

// llamaVariant holds what distinguishes the Llama-family architectures.
type llamaVariant struct {
	arch, modelClass, layerClass, attnClass, mlpClass string
	qkvBias                                           bool // Qwen2: q/k/v projections always have a bias
	qkNorm                                            bool // Qwen3: RMSNorm on each q and k head before RoPE
	window                                            func(c *LlamaConfig, layer int) int
	defTheta                                          float64
}

// LlamaConfig is config.json of a Llama-family model (HF LlamaConfig,
// MistralConfig, Qwen2Config, Qwen3Config: the fields they share).
type LlamaConfig struct {
	Architectures         []string         `json:"architectures"`
	ModelType             string           `json:"model_type"`
	HiddenSize            int              `json:"hidden_size"`
	IntermediateSize      int              `json:"intermediate_size"`
	NumHiddenLayers       int              `json:"num_hidden_layers"`
	NumAttentionHeads     int              `json:"num_attention_heads"`
	NumKeyValueHeads      int              `json:"num_key_value_heads"`
	HeadDimField          int              `json:"head_dim"`
	VocabSize             int              `json:"vocab_size"`
	RMSNormEps            float64          `json:"rms_norm_eps"`
	TieWordEmbeddings     bool             `json:"tie_word_embeddings"`
	MaxPositionEmbeddings int              `json:"max_position_embeddings"`
	AttentionBias         bool             `json:"attention_bias"`
	MLPBias               bool             `json:"mlp_bias"`
	HiddenAct             string           `json:"hidden_act"`
	SlidingWindow         *int             `json:"sliding_window"`
	UseSlidingWindow      bool             `json:"use_sliding_window"`
	MaxWindowLayers       int              `json:"max_window_layers"`
	TorchDType            string           `json:"torch_dtype"`
	DTypeField            string           `json:"dtype"`
	RoPE                  model.RoPEConfig `json:"-"`

	v    *llamaVariant
	dims model.Dims
}

func registerLlama(v *llamaVariant, modelTypes ...string) {
	model.Register(model.Architecture{Name: v.arch, ModelTypes: modelTypes, Parse: func(raw map[string]json.RawMessage) (model.Config, error) {
		return parseLlama(raw, v)
	}})
}

func parseLlama(raw map[string]json.RawMessage, v *llamaVariant) (*LlamaConfig, error) {
	c := &LlamaConfig{v: v, RMSNormEps: 1e-6, HiddenAct: "silu", MaxPositionEmbeddings: 2048}
	data, _ := json.Marshal(raw)
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("config.json (%s): %w", v.arch, err)
	}
	c.v = v
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize}, {"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads}, {"vocab_size", c.VocabSize}} {
		if f.v <= 0 {
			return nil, fmt.Errorf("config.json (%s): %s must be positive, got %d", v.arch, f.name, f.v)
		}
	}
	if c.HeadDimField == 0 {
		if c.HiddenSize%c.NumAttentionHeads != 0 {
			return nil, fmt.Errorf("config.json (%s): hidden_size %d is not divisible by num_attention_heads %d and head_dim is not given", v.arch, c.HiddenSize, c.NumAttentionHeads)
		}
		c.HeadDimField = c.HiddenSize / c.NumAttentionHeads
	}
	if c.HeadDimField%2 != 0 {
		return nil, fmt.Errorf("config.json (%s): head_dim %d must be even for RoPE", v.arch, c.HeadDimField)
	}
	if c.HiddenAct != "silu" {
		return nil, fmt.Errorf("config.json (%s): hidden_act %q is not supported (silu is)", v.arch, c.HiddenAct)
	}
	if !(c.RMSNormEps > 0) || c.RMSNormEps > 1 {
		return nil, fmt.Errorf("config.json (%s): rms_norm_eps %v must be in (0, 1]", v.arch, c.RMSNormEps)
	}
	rope, err := model.ParseRoPE(raw, c.MaxPositionEmbeddings, v.defTheta)
	if err != nil {
		return nil, fmt.Errorf("config.json (%s): %w", v.arch, err)
	}
	c.RoPE = rope
	dt := tensor.F32
	for _, s := range []string{c.DTypeField, c.TorchDType} {
		if s != "" {
			if d, err := tensor.ParseDType(s); err == nil {
				dt = d
				break
			}
		}
	}
	c.dims = model.Dims{Arch: v.arch, ModelType: c.ModelType, Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Vocab: c.VocabSize,
		Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDimField, Intermediate: c.IntermediateSize,
		MaxPos: c.MaxPositionEmbeddings, DType: dt, Tied: c.TieWordEmbeddings,
		Named: map[string]int{"hidden_size": c.HiddenSize, "intermediate_size": c.IntermediateSize, "num_attention_heads": c.NumAttentionHeads,
			"num_key_value_heads": c.NumKeyValueHeads, "head_dim": c.HeadDimField, "vocab_size": c.VocabSize, "num_hidden_layers": c.NumHiddenLayers,
			"num_attention_heads*head_dim": c.NumAttentionHeads * c.HeadDimField, "num_key_value_heads*head_dim": c.NumKeyValueHeads * c.HeadDimField}}
	return c, nil
}

// Dims returns the model's sizes.
func (c *LlamaConfig) Dims() *model.Dims { return &c.dims }

// Validate checks the split over world ranks (heads, kv heads,
// intermediate_size), as vLLM's linear layers require.
func (c *LlamaConfig) Validate(world int) error {
	if world < 1 {
		return fmt.Errorf("--tp %d: the world size must be at least 1", world)
	}
	if _, err := model.PlanHeads(c.NumAttentionHeads, c.NumKeyValueHeads, world); err != nil {
		return err
	}
	if c.IntermediateSize%world != 0 {
		return fmt.Errorf("intermediate_size %d is not divisible by --tp %d", c.IntermediateSize, world)
	}
	return nil
}

func (c *LlamaConfig) window(layer int) int {
	if c.v.window == nil {
		return 0
	}
	return c.v.window(c, layer)
}

// Tree builds vLLM's module tree: LlamaForCausalLM > LlamaModel >
// (VocabParallelEmbedding, LlamaDecoderLayer × L, RMSNorm) and ParallelLMHead.
func (c *LlamaConfig) Tree(world int) *model.Tree {
	v := c.v
	H, I, hd := c.HiddenSize, c.IntermediateSize, c.HeadDimField
	plan, _ := model.PlanHeads(c.NumAttentionHeads, c.NumKeyValueHeads, world)
	vocab := model.PlanVocab(c.VocabSize, world)
	qr, kvr := make([][2]int, world), make([][2]int, world)
	for r := range world {
		qr[r] = model.Scaled(plan.Q(r), hd)
		kvr[r] = model.Scaled(plan.KV(r), hd)
	}
	t := model.NewTree(v.arch)
	m := t.Root.Add("model", v.modelClass, "hidden_states")
	m.Add("embed_tokens", "VocabParallelEmbedding", "partial", "hidden_states").
		Param("weight", []int{c.VocabSize, H}, 0, vocab.Ranges(world))
	for i := range c.NumHiddenLayers {
		l := m.Add(fmt.Sprintf("layers.%d", i), v.layerClass, "hidden_states", "residual", "stream")
		l.Add("input_layernorm", "RMSNorm", "input", "input_residual", "hidden_states", "residual").Param("weight", []int{H}, -1, nil)
		a := l.Add("self_attn", v.attnClass, "input", "output")
		qkv := a.Add("qkv_proj", "QKVParallelLinear", "input", "q", "k", "v")
		for _, p := range []struct {
			n   string
			out int
			r   [][2]int
		}{{"q_proj", c.NumAttentionHeads * hd, qr}, {"k_proj", c.NumKeyValueHeads * hd, kvr}, {"v_proj", c.NumKeyValueHeads * hd, kvr}} {
			qkv.Params = append(qkv.Params, model.Param{Name: a.Path + "." + p.n + ".weight", Shape: []int{p.out, H}, Dim: 0, Ranges: p.r})
			if v.qkvBias || c.AttentionBias {
				qkv.Params = append(qkv.Params, model.Param{Name: a.Path + "." + p.n + ".bias", Shape: []int{p.out}, Dim: 0, Ranges: p.r})
			}
		}
		if v.qkNorm {
			a.Add("q_norm", "RMSNorm", "q").Param("weight", []int{hd}, -1, nil)
			a.Add("k_norm", "RMSNorm", "k").Param("weight", []int{hd}, -1, nil)
		}
		a.Add("rotary_emb", "RotaryEmbedding", "q", "k")
		a.Add("attn", "Attention", "attn_out")
		o := a.Add("o_proj", "RowParallelLinear", "input", "partial", "output").Param("weight", []int{H, c.NumAttentionHeads * hd}, 1, qr)
		if c.AttentionBias {
			o.Param("bias", []int{H}, -1, nil)
		}
		l.Add("post_attention_layernorm", "RMSNorm", "input", "input_residual", "hidden_states", "residual").Param("weight", []int{H}, -1, nil)
		mlp := l.Add("mlp", v.mlpClass, "input", "output")
		gu := mlp.Add("gate_up_proj", "MergedColumnParallelLinear", "input", "gate", "up")
		ir := model.EvenRanges(I, world)
		for _, n := range []string{"gate_proj", "up_proj"} {
			gu.Params = append(gu.Params, model.Param{Name: mlp.Path + "." + n + ".weight", Shape: []int{I, H}, Dim: 0, Ranges: ir})
			if c.MLPBias {
				gu.Params = append(gu.Params, model.Param{Name: mlp.Path + "." + n + ".bias", Shape: []int{I}, Dim: 0, Ranges: ir})
			}
		}
		mlp.Add("act_fn", "SiluAndMul", "output")
		d := mlp.Add("down_proj", "RowParallelLinear", "input", "partial", "output").Param("weight", []int{H, I}, 1, ir)
		if c.MLPBias {
			d.Param("bias", []int{H}, -1, nil)
		}
	}
	m.Add("norm", "RMSNorm", "input", "input_residual", "hidden_states").Param("weight", []int{H}, -1, nil)
	head := t.Root.Add("lm_head", "ParallelLMHead", "input", "logits")
	if !c.TieWordEmbeddings {
		head.Param("weight", []int{c.VocabSize, H}, 0, vocab.Ranges(world))
	}
	return t.Finish()
}

// llamaLayer is one rank's decoder layer i.
type llamaLayer struct {
	inNorm, postNorm backend.Tensor // [hidden]
	wq, wk, wv       backend.Tensor // [heads_r*hd, hidden], [kv_r*hd, hidden]
	bq, bk, bv       backend.Tensor // biases or nil
	qNorm, kNorm     backend.Tensor // [hd] (Qwen3) or nil
	wo, bo           backend.Tensor // [hidden, heads_r*hd]; bias on rank 0 only
	wGate, wUp       backend.Tensor // [I/tp, hidden]
	bGate, bUp       backend.Tensor
	wDown, bDown     backend.Tensor // [hidden, I/tp]
	sites            llamaSites
	window           int
	qCols, kvCols    [2]int // this rank's q and kv feature ranges
}

type llamaSites struct {
	layer, inNorm, attn, qkv, qNorm, kNorm, rope, core, o, postNorm, mlp, gateUp, act, down *model.Site
}

// llamaRank is one rank's share of a Llama-family model.
type llamaRank struct {
	ends
	c       *LlamaConfig
	layers  []*llamaLayer
	plan    model.HeadPlan
	invFreq []float32
	mscale  float32
	// args holds the RoPE and attention arguments of the layer being run,
	// so that a step does not allocate them (one rank runs on one
	// goroutine).
	args struct {
		rope backend.RoPEArgs
		attn backend.AttnArgs
	}
}

// Load reads rank l.Rank's shard of every weight.
func (c *LlamaConfig) Load(l *model.Loader, t *model.Tree) (model.RankModel, error) {
	world, rank := l.World, l.Rank
	H, I, hd := c.HiddenSize, c.IntermediateSize, c.HeadDimField
	plan, err := model.PlanHeads(c.NumAttentionHeads, c.NumKeyValueHeads, world)
	if err != nil {
		return nil, err
	}
	m := &llamaRank{c: c, plan: plan}
	m.invFreq, m.mscale = c.RoPE.InvFreq(hd)
	lm := l.Pp("model")
	m.ends = loadEnds(l, lm, t, "lm_head.weight", c.VocabSize, H, c.TieWordEmbeddings, c.RMSNormEps)
	qc, kvc := model.Scaled(plan.Q(rank), hd), model.Scaled(plan.KV(rank), hd)
	ic := model.Even(I, world, rank)
	bias := func(ll *model.Loader, on bool, n string, full int, r [2]int) backend.Tensor {
		if !on {
			return nil
		}
		return ll.Rows(n, []int{full}, r[0], r[1])
	}
	for i := range c.NumHiddenLayers {
		ll := lm.Pp("layers").PpI(i)
		a, mp := ll.Pp("self_attn"), ll.Pp("mlp")
		L := &llamaLayer{qCols: qc, kvCols: kvc, window: c.window(i)}
		L.inNorm = ll.Full("input_layernorm.weight", H)
		L.postNorm = ll.Full("post_attention_layernorm.weight", H)
		qb := c.v.qkvBias || c.AttentionBias
		L.wq = a.Rows("q_proj.weight", []int{c.NumAttentionHeads * hd, H}, qc[0], qc[1])
		L.wk = a.Rows("k_proj.weight", []int{c.NumKeyValueHeads * hd, H}, kvc[0], kvc[1])
		L.wv = a.Rows("v_proj.weight", []int{c.NumKeyValueHeads * hd, H}, kvc[0], kvc[1])
		L.bq = bias(a, qb, "q_proj.bias", c.NumAttentionHeads*hd, qc)
		L.bk = bias(a, qb, "k_proj.bias", c.NumKeyValueHeads*hd, kvc)
		L.bv = bias(a, qb, "v_proj.bias", c.NumKeyValueHeads*hd, kvc)
		if c.v.qkNorm {
			L.qNorm = a.Full("q_norm.weight", hd)
			L.kNorm = a.Full("k_norm.weight", hd)
		}
		L.wo = a.Cols("o_proj.weight", []int{H, c.NumAttentionHeads * hd}, qc[0], qc[1])
		if c.AttentionBias && rank == 0 {
			L.bo = a.Full("o_proj.bias", H)
		}
		L.wGate = mp.Rows("gate_proj.weight", []int{I, H}, ic[0], ic[1])
		L.wUp = mp.Rows("up_proj.weight", []int{I, H}, ic[0], ic[1])
		L.bGate = bias(mp, c.MLPBias, "gate_proj.bias", I, ic)
		L.bUp = bias(mp, c.MLPBias, "up_proj.bias", I, ic)
		L.wDown = mp.Cols("down_proj.weight", []int{H, I}, ic[0], ic[1])
		if c.MLPBias && rank == 0 {
			L.bDown = mp.Full("down_proj.bias", H)
		}
		p := fmt.Sprintf("model.layers.%d", i)
		s := &L.sites
		s.layer, s.inNorm, s.attn, s.qkv = t.Site(p), t.Site(p+".input_layernorm"), t.Site(p+".self_attn"), t.Site(p+".self_attn.qkv_proj")
		s.qNorm, s.kNorm, s.rope, s.core, s.o = t.Site(p+".self_attn.q_norm"), t.Site(p+".self_attn.k_norm"), t.Site(p+".self_attn.rotary_emb"), t.Site(p+".self_attn.attn"), t.Site(p+".self_attn.o_proj")
		s.postNorm, s.mlp, s.gateUp, s.act, s.down = t.Site(p+".post_attention_layernorm"), t.Site(p+".mlp"), t.Site(p+".mlp.gate_up_proj"), t.Site(p+".mlp.act_fn"), t.Site(p+".mlp.down_proj")
		m.layers = append(m.layers, L)
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func rep(t backend.Tensor) model.Sharding { return model.Sharding{Kind: model.Replicated} }

func shard(r [2]int, full int) model.Sharding {
	return model.Sharding{Kind: model.Sharded, Start: r[0], End: r[1], Full: full}
}

var partial = model.Sharding{Kind: model.Partial}

// Forward runs one step on rank r (vLLM LlamaModel.forward + compute_logits).
func (m *llamaRank) Forward(r *model.Rank, b *model.Batch) backend.Tensor {
	h := m.embedTokens(r, b)
	h, res := runLayers(r.Dev, h, len(m.layers), func(i int, h, res backend.Tensor) (backend.Tensor, backend.Tensor) {
		return m.layer(r, b, i, m.layers[i], h, res)
	})
	return m.logits(r, b, h, res)
}

// layer runs decoder layer i: vLLM LlamaDecoderLayer.forward.
func (m *llamaRank) layer(r *model.Rank, b *model.Batch, i int, L *llamaLayer, h, res backend.Tensor) (backend.Tensor, backend.Tensor) {
	s := &L.sites
	return decoderLayer(r, normSites{s.layer, s.inNorm, s.postNorm}, L.inNorm, L.postNorm, float32(m.c.RMSNormEps), h, res,
		func(x backend.Tensor) backend.Tensor { return m.attention(r, b, i, L, x) },
		func(x backend.Tensor) backend.Tensor { return m.mlp(r, L, x) })
}

// attention is vLLM LlamaAttention.forward: qkv_proj → (q/k norm) → rotary →
// attention over the KV cache → o_proj (row-parallel, all-reduce).
func (m *llamaRank) attention(r *model.Rank, b *model.Batch, i int, L *llamaLayer, x backend.Tensor) backend.Tensor {
	dev, c, s := r.Dev, m.c, &L.sites
	hd := c.HeadDimField
	nq, nkv := m.plan.QPerRank, m.plan.KVPerRank
	qFull, kvFull := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	r.Enter(s.attn, x)
	q := dev.Linear(x, L.wq, L.bq)
	k := dev.Linear(x, L.wk, L.bk)
	v := dev.Linear(x, L.wv, L.bv)
	r.Leaf(s.qkv, x, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "q", T: q, Shard: shard(L.qCols, qFull)}, {Name: "k", T: k, Shard: shard(L.kvCols, kvFull)}, {Name: "v", T: v, Shard: shard(L.kvCols, kvFull)}}
	})
	T := b.Tokens()
	if L.qNorm != nil {
		q = dev.Reshape(dev.RMSNorm(dev.Reshape(q, T*nq, hd), L.qNorm, float32(c.RMSNormEps)), T, nq*hd)
		r.Leaf(s.qNorm, q, func() []model.SiteTensor { return []model.SiteTensor{{Name: "q", T: q, Shard: shard(L.qCols, qFull)}} })
		k = dev.Reshape(dev.RMSNorm(dev.Reshape(k, T*nkv, hd), L.kNorm, float32(c.RMSNormEps)), T, nkv*hd)
		r.Leaf(s.kNorm, k, func() []model.SiteTensor {
			return []model.SiteTensor{{Name: "k", T: k, Shard: shard(L.kvCols, kvFull)}}
		})
	}
	args := &m.args // reused: the arguments escape to the device interface
	args.rope = backend.RoPEArgs{Heads: nq, HeadDim: hd, Pos: b.Pos, InvFreq: m.invFreq, MScale: m.mscale}
	q = dev.RoPE(q, &args.rope)
	args.rope.Heads = nkv
	k = dev.RoPE(k, &args.rope)
	r.Leaf(s.rope, q, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "q", T: q, Shard: shard(L.qCols, qFull)}, {Name: "k", T: k, Shard: shard(L.kvCols, kvFull)}}
	})
	kv := r.KV.Layers[i]
	base, pos := kv.Store(dev, b, k, v)
	args.attn = backend.AttnArgs{Heads: nq, KVHeads: nkv, DK: hd, DV: hd, Scale: float32(1 / math.Sqrt(float64(hd))), Window: L.window, Base: base, Pos: pos}
	o := dev.Attention(q, kv.K, kv.V, &args.attn)
	r.Leaf(s.core, q, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "attn_out", T: o, Shard: shard(L.qCols, qFull)}}
	})
	p := dev.Linear(o, L.wo, L.bo)
	out := r.Comm.AllReduceSum(p)
	r.Leaf(s.o, o, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: o, Shard: shard(L.qCols, qFull)}, {Name: "partial", T: p, Shard: partial}, {Name: "output", T: out, Shard: rep(out)}}
	})
	r.Exit(s.attn, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "output", T: out, Shard: rep(out)}}
	})
	return out
}

// mlp is vLLM LlamaMLP.forward: gate_up_proj (column-parallel) → SiluAndMul →
// down_proj (row-parallel, all-reduce).
func (m *llamaRank) mlp(r *model.Rank, L *llamaLayer, x backend.Tensor) backend.Tensor {
	dev, s := r.Dev, &L.sites
	I := m.c.IntermediateSize
	ic := model.Even(I, r.World, r.Index)
	r.Enter(s.mlp, x)
	g := dev.Linear(x, L.wGate, L.bGate)
	u := dev.Linear(x, L.wUp, L.bUp)
	r.Leaf(s.gateUp, x, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "gate", T: g, Shard: shard(ic, I)}, {Name: "up", T: u, Shard: shard(ic, I)}}
	})
	a := dev.SiluMul(g, u)
	r.Leaf(s.act, g, func() []model.SiteTensor { return []model.SiteTensor{{Name: "output", T: a, Shard: shard(ic, I)}} })
	p := dev.Linear(a, L.wDown, L.bDown)
	out := r.Comm.AllReduceSum(p)
	r.Leaf(s.down, a, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: a, Shard: shard(ic, I)}, {Name: "partial", T: p, Shard: partial}, {Name: "output", T: out, Shard: rep(out)}}
	})
	r.Exit(s.mlp, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "output", T: out, Shard: rep(out)}}
	})
	return out
}
