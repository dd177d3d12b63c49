package arch

import (
	"encoding/json"
	"fmt"
	"math"

	"hsdb/engine/jsonerr"
	"hsdb/engine/model"
	"hsdb/engine/nn"
)

// DeepSeek-V2 and DeepSeek-V3 (HF transformers 5.x modeling_deepseek_v2.py,
// modeling_deepseek_v3.py; vLLM deepseek_v2.py, which runs both and Kimi-K2):
// a Llama-style pre-norm decoder whose attention is multi-head latent
// attention (nn.MLA) and whose MLP is dense in the first
// first_k_dense_replace layers and a mixture of experts after (nn.MoE).
// Kimi-K2 (model_type kimi_k2) is DeepseekV3ForCausalLM with other sizes;
// Kimi-K2.5 wraps it in a multimodal config whose text_config is read here
// (model.ParseConfig unwraps it; the loader skips the vision tensors).

// deepseekVariant holds what distinguishes V2 from V3 in HF transformers.
type deepseekVariant struct {
	arch       string
	modelTypes []string
	v3         bool    // sigmoid router with correction bias and grouped top-k; rope_interleave honoured
	class      string  // the HF config class: "DeepseekV3Config"
	fields     []field // its defaults and nulls (fields.go)
}

// DeepseekConfig is config.json of a DeepSeek-V2/V3-architecture model (HF
// DeepseekV2Config, DeepseekV3Config; Kimi-K2's config). Absent fields take
// HF's defaults for the architecture.
type DeepseekConfig struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	MoeIntermediateSize   int      `json:"moe_intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	HiddenAct             string   `json:"hidden_act"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	AttentionBias         bool     `json:"attention_bias"`
	MLPBias               bool     `json:"mlp_bias"`
	QLoraRank             *int     `json:"q_lora_rank"` // null: q_proj (DeepSeek-V2-Lite)
	KVLoraRank            int      `json:"kv_lora_rank"`
	QKNopeHeadDim         int      `json:"qk_nope_head_dim"`
	QKRopeHeadDim         int      `json:"qk_rope_head_dim"`
	VHeadDim              int      `json:"v_head_dim"`
	NRoutedExperts        *int     `json:"n_routed_experts"` // null: every layer dense
	NSharedExperts        *int     `json:"n_shared_experts"`
	NumExpertsPerTok      *int     `json:"num_experts_per_tok"`
	NGroup                *int     `json:"n_group"`
	TopkGroup             *int     `json:"topk_group"`
	TopkMethod            string   `json:"topk_method"`
	ScoringFunc           string   `json:"scoring_func"`
	NormTopkProb          bool     `json:"norm_topk_prob"`
	RoutedScalingFactor   float64  `json:"routed_scaling_factor"`
	FirstKDenseReplace    int      `json:"first_k_dense_replace"`
	MoeLayerFreq          int      `json:"moe_layer_freq"`
	RopeInterleave        bool     `json:"rope_interleave"`
	TorchDType            string   `json:"torch_dtype"`
	DTypeField            string   `json:"dtype"`
	// RoPE is the rotary embedding of the qk_rope_head_dim part, from
	// rope_parameters (transformers 5) or rope_theta + rope_scaling.
	RoPE model.RoPEConfig `json:"-"`

	v      *deepseekVariant
	dims   model.Dims
	mla    *nn.MLAConfig
	moe    *nn.MoEConfig // nil when the model has no routed experts
	layers model.LayerRange
	set    fieldSet // the class defaults applied
}

// deepseekFields lists the fields both DeepSeek config classes have, with
// the class's defaults d, then the class's own. null for n_routed_experts
// and n_shared_experts means none, as vLLM (DeepseekV2DecoderLayer,
// DeepseekV2MoE) and DeepSeek's own modeling code read it; n_group and
// topk_group null mean one group; num_experts_per_tok null is refused by
// buildMoE when there are routed experts.
func deepseekFields(d deepseekSizes, own ...field) []field {
	return append([]field{size("vocab_size", d.vocab), size("hidden_size", d.hidden), size("intermediate_size", d.inter),
		size("moe_intermediate_size", d.moeInter), size("num_hidden_layers", d.layers), size("num_attention_heads", d.heads),
		{name: "max_position_embeddings", def: d.maxPos}, opt("q_lora_rank", 1536, "no query LoRA (q_proj)").sizes(),
		size("kv_lora_rank", 512), size("qk_nope_head_dim", 128), size("qk_rope_head_dim", 64), size("v_head_dim", 128),
		opt("n_routed_experts", d.experts, "no routed experts: every layer dense").sizes(),
		opt("n_shared_experts", d.shared, "no shared experts").sizes(), opt("num_experts_per_tok", d.topK, "no top-k").noted(),
		opt("n_group", d.groups, "one group").noted(), opt("topk_group", d.topkGroup, "one group").noted(),
		{name: "first_k_dense_replace", def: d.firstDense, note: true}, {name: "routed_scaling_factor", def: d.scale, note: true},
		{name: "hidden_act", def: "silu"}, {name: "rms_norm_eps", def: 1e-6}, {name: "tie_word_embeddings", def: false},
		{name: "attention_bias", def: false}, {name: "mlp_bias", def: false},
		{name: "moe_layer_freq", def: 1, from: "vLLM"}}, own...)
}

// deepseekSizes are the defaults that differ between the DeepSeek config
// classes; nil for an optional field the class leaves None.
type deepseekSizes struct {
	vocab, hidden, inter, moeInter, layers, heads, maxPos, firstDense int
	experts, shared, topK, groups, topkGroup                          any
	scale                                                             float64
}

// HF DeepseekV3Config's defaults are DeepSeek-V3's sizes. norm_topk_prob
// and rope_interleave null are false (the class accepts None, which its
// modeling code tests as false).
var deepseekV3 = &deepseekVariant{arch: "DeepseekV3ForCausalLM", modelTypes: []string{"deepseek_v3", "kimi_k2"}, v3: true, class: "DeepseekV3Config",
	fields: deepseekFields(deepseekSizes{vocab: 129280, hidden: 7168, inter: 18432, moeInter: 2048, layers: 61, heads: 128, maxPos: 4096,
		firstDense: 3, experts: 256, shared: 1, topK: 8, groups: 8, topkGroup: 4, scale: 2.5},
		field{name: "norm_topk_prob", def: true, null: "false", note: true}, field{name: "rope_interleave", def: true, null: "false"},
		// Not DeepseekV3Config fields: HF hard-codes this routing, and
		// buildMoE refuses any other.
		field{name: "scoring_func", def: "sigmoid", from: "HF DeepseekV3MoE", note: true}, field{name: "topk_method", def: "noaux_tc", from: "HF DeepseekV3MoE", note: true})}

// HF DeepseekV2Config's defaults (its n_group, topk_group and
// num_experts_per_tok are None).
var deepseekV2 = &deepseekVariant{arch: "DeepseekV2ForCausalLM", modelTypes: []string{"deepseek_v2"}, class: "DeepseekV2Config",
	fields: deepseekFields(deepseekSizes{vocab: 32000, hidden: 4096, inter: 11008, moeInter: 1407, layers: 32, heads: 32, maxPos: 2048,
		firstDense: 0, experts: 64, shared: 2, scale: 1},
		field{name: "norm_topk_prob", def: false, null: "false", note: true}, field{name: "topk_method", def: "greedy", note: true},
		field{name: "scoring_func", def: "softmax", from: "HF DeepseekV2MoE", note: true})}

func init() {
	for _, v := range []*deepseekVariant{deepseekV3, deepseekV2} {
		model.Register(model.Architecture{Name: v.arch, ModelTypes: v.modelTypes, Parse: func(raw map[string]json.RawMessage) (model.Config, error) {
			return parseDeepseek(raw, v)
		}})
	}
}

func parseDeepseek(raw map[string]json.RawMessage, v *deepseekVariant) (cfg *DeepseekConfig, err error) {
	if err := checkArchitectures(raw, v.arch); err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("config.json (%s): "+format, append([]any{v.arch}, a...)...)
	}
	full, set, err := applyFields(raw, v.class, v.fields)
	if err != nil {
		return nil, fail("%w", err)
	}
	c := &DeepseekConfig{v: v, set: set}
	data, _ := json.Marshal(full)
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fail("%w", jsonerr.Explain(err))
	}
	// Errors from here on are of the values, defaults included: each says
	// which fields took a default (a JSON type error above is the file's).
	defer func() { err = set.hint(err) }()
	c.v, c.set = v, set
	// The sizes are positive here: model.CheckBounds refused a 0 written
	// out, and the class defaults are positive.
	if c.QKRopeHeadDim%2 != 0 {
		return nil, fail("qk_rope_head_dim %d must be even for RoPE", c.QKRopeHeadDim)
	}
	if !(c.RMSNormEps > 0) || c.RMSNormEps > 1 {
		return nil, fail("rms_norm_eps %v must be in (0, 1]", c.RMSNormEps)
	}
	if c.HiddenAct != "silu" {
		return nil, fail("hidden_act %q is not supported (silu is)", c.HiddenAct)
	}
	if c.AttentionBias || c.MLPBias {
		return nil, fail("attention_bias/mlp_bias true is not supported (no DeepSeek-architecture checkpoint uses biases)")
	}
	rope, err := model.ParseRoPE(raw, c.MaxPositionEmbeddings, 10000)
	if err != nil {
		return nil, fail("%w", err)
	}
	if rope.Type != "default" && rope.Type != "yarn" {
		return nil, fail("rope type %q is not supported for DeepSeek models (default and yarn are)", rope.Type)
	}
	c.RoPE = rope
	c.layers = model.LayerRange{First: 0, Last: c.NumHiddenLayers - 1}
	c.buildMLA()
	if err := c.buildMoE(); err != nil {
		return nil, fail("%w", err)
	}
	c.buildDims()
	return c, nil
}

// buildMLA derives the attention's sizes, RoPE and softmax scale.
func (c *DeepseekConfig) buildMLA() {
	d := &nn.MLAConfig{Hidden: c.HiddenSize, Heads: c.NumAttentionHeads, KVLora: c.KVLoraRank, Nope: c.QKNopeHeadDim,
		Rope: c.QKRopeHeadDim, V: c.VHeadDim, Class: "DeepseekV2MLAAttention", RopeClass: "RotaryEmbedding",
		// HF builds q_a_layernorm and kv_a_layernorm with the RMSNorm default
		// eps 1e-6, not rms_norm_eps (vLLM uses rms_norm_eps; released
		// checkpoints set it to 1e-6 so the two agree).
		Eps: 1e-6,
		// HF V2 rotates adjacent pairs (view_as_complex); V3 does when
		// rope_interleave (its default).
		Interleaved: !c.v.v3 || c.RopeInterleave}
	if c.QLoraRank != nil {
		d.QLora = *c.QLoraRank
	}
	d.InvFreq, d.MScale = c.RoPE.InvFreq(d.Rope)
	scale := 1 / math.Sqrt(float64(d.QK()))
	if c.RoPE.Type == "yarn" {
		d.RopeClass = "DeepseekScalingRotaryEmbedding"
		// DeepSeek's softmax-scale correction (HF DeepseekV3Attention and,
		// since transformers PR 47435, DeepseekV2Attention; vLLM): times
		// yarn_get_mscale(factor, mscale_all_dim)².
		if c.RoPE.MScaleAllDim != 0 {
			m := model.YarnGetMScale(c.RoPE.Factor, c.RoPE.MScaleAllDim)
			scale *= m * m
		}
	}
	d.Scale = float32(scale)
	c.mla = d
}

// buildMoE derives the routed experts' sizes and routing rule; a model
// without routed experts (n_routed_experts null) has only dense layers.
// HF builds MoE layers whenever n_routed_experts is not null
// (DeepseekV3DecoderLayer), so experts without num_experts_per_tok are an
// error naming the field, not a dense model whose first missing dense
// weight would be named instead (0 experts model.CheckBounds refuses).
func (c *DeepseekConfig) buildMoE() error {
	if c.NRoutedExperts == nil {
		return nil
	}
	if c.NumExpertsPerTok == nil {
		return fmt.Errorf("num_experts_per_tok is missing or null with n_routed_experts %d: the routing needs top-k", *c.NRoutedExperts)
	}
	E, k := *c.NRoutedExperts, *c.NumExpertsPerTok
	if k < 1 || k > E {
		return fmt.Errorf("num_experts_per_tok %d must be in [1, n_routed_experts %d]", k, E)
	}
	// The routed experts' sum is multiplied by it in float32 (HF and vLLM):
	// 1e39 and up is +Inf there and every MoE output Inf or NaN; zero or a
	// negative factor silences or inverts the routed experts.
	if f := float32(c.RoutedScalingFactor); !(f > 0) || math.IsInf(float64(f), 0) {
		return fmt.Errorf("routed_scaling_factor %v must be positive and finite in float32 (at most %g)", c.RoutedScalingFactor, math.MaxFloat32)
	}
	shared := 0
	if c.NSharedExperts != nil {
		shared = *c.NSharedExperts
	}
	if shared < 0 {
		return fmt.Errorf("n_shared_experts must not be negative, got %d", shared)
	}
	// n_group and topk_group are at least 1 (model.CheckBounds: HF's
	// grouped top-k would divide by n_group 0 or keep no group with
	// topk_group 0); null means one group.
	groups, topkGroup := 1, 1
	if c.NGroup != nil {
		groups = *c.NGroup
	}
	if c.TopkGroup != nil {
		topkGroup = *c.TopkGroup
	}
	g := nn.Router{Experts: E, TopK: k, Groups: groups, TopkGroup: topkGroup, NormTopK: c.NormTopkProb, Scale: float32(c.RoutedScalingFactor)}
	d := &nn.MoEConfig{Hidden: c.HiddenSize, Experts: E, Inter: c.MoeIntermediateSize, SharedInter: c.MoeIntermediateSize * shared, SharedClass: mlpClass}
	if c.v.v3 {
		// HF DeepseekV3 hard-codes sigmoid scores, the correction bias and
		// grouped top-k (noaux_tc) whatever scoring_func/topk_method say.
		if c.ScoringFunc != "sigmoid" || c.TopkMethod != "noaux_tc" {
			return fmt.Errorf("scoring_func %q / topk_method %q: DeepseekV3ForCausalLM routes with sigmoid / noaux_tc only", c.ScoringFunc, c.TopkMethod)
		}
		g.Sigmoid, d.Bias, d.Class = true, true, "DeepseekV3MoE"
	} else {
		if c.ScoringFunc != "softmax" {
			return fmt.Errorf("scoring_func %q: DeepseekV2ForCausalLM routes with softmax only", c.ScoringFunc)
		}
		switch c.TopkMethod {
		case "greedy":
			g.Groups, g.TopkGroup = 1, 1
		case "group_limited_greedy":
		default:
			return fmt.Errorf("topk_method %q: DeepseekV2ForCausalLM supports greedy and group_limited_greedy", c.TopkMethod)
		}
		d.Class = "DeepseekV2MoE"
	}
	if E%g.Groups != 0 {
		return fmt.Errorf("n_routed_experts %d is not divisible by n_group %d", E, g.Groups)
	}
	if g.TopkGroup > g.Groups {
		return fmt.Errorf("topk_group %d exceeds n_group %d", g.TopkGroup, g.Groups)
	}
	if per := E / g.Groups; g.Groups > 1 && g.TopkGroup < g.Groups && k > g.TopkGroup*per {
		return fmt.Errorf("num_experts_per_tok %d exceeds the %d experts of topk_group %d groups", k, g.TopkGroup*per, g.TopkGroup)
	}
	d.Route = g
	c.moe = d
	return nil
}

func (c *DeepseekConfig) buildDims() {
	dt := model.ConfigDType(c.DTypeField, c.TorchDType)
	d := c.mla
	qk := d.QK()
	named := map[string]int{"hidden_size": c.HiddenSize, "intermediate_size": c.IntermediateSize, "num_attention_heads": d.Heads,
		"vocab_size": c.VocabSize, "num_hidden_layers": c.NumHiddenLayers, "kv_lora_rank": d.KVLora, "qk_nope_head_dim": d.Nope,
		"qk_rope_head_dim": d.Rope, "v_head_dim": d.V, "qk_head_dim": qk, "kv_lora_rank+qk_rope_head_dim": d.KVLora + d.Rope,
		"num_attention_heads*qk_head_dim": d.Heads * qk, "num_attention_heads*v_head_dim": d.Heads * d.V,
		"num_attention_heads*(qk_nope_head_dim+v_head_dim)": d.Heads * (d.Nope + d.V)}
	if d.QLora > 0 {
		named["q_lora_rank"] = d.QLora
	}
	if c.moe != nil {
		named["moe_intermediate_size"] = c.moe.Inter
		named["n_routed_experts"] = c.moe.Experts
		named["num_experts_per_tok"] = c.moe.Route.TopK
		if c.moe.SharedInter > 0 {
			named["moe_intermediate_size*n_shared_experts"] = c.moe.SharedInter
		}
	}
	c.dims = model.Dims{Arch: c.v.arch, ModelType: c.ModelType, Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Vocab: c.VocabSize,
		Heads: d.Heads, KVHeads: d.Heads, HeadDim: qk, Intermediate: c.IntermediateSize, MaxPos: c.MaxPositionEmbeddings,
		DType: dt, Tied: c.TieWordEmbeddings, Named: named}
}

// Dims returns the model's sizes; HeadDim is qk_head_dim (qk_nope + qk_rope)
// and KVHeads equals Heads (MLA expands the latent to every head).
func (c *DeepseekConfig) Dims() *model.Dims { return &c.dims }

// Notes says which sizes took the config class's default because
// config.json has none ("hidden_size 7168 is DeepseekV3Config's default
// (config.json has none)"), for the caller to print beside a plan or a
// load; nil when none did.
func (c *DeepseekConfig) Notes() []string { return c.set.notes() }

// Hint adds to err (an error found after parsing: a tensor of another
// shape or missing) the fields config.json left to the class's defaults,
// unless it names its default already; err itself when none was applied.
func (c *DeepseekConfig) Hint(err error) error { return c.set.hint(err) }

// CheckDefaults returns an error (wrapping model.ErrWeight) when a tensor
// of src disagrees with tree t's shape in a dimension that a class default
// sized: "hidden_size 7168 (DeepseekV3Config's default: config.json has
// none) but tensor model.embed_tokens.weight is [101, 96] in the
// checkpoint (the config implies [101, 7168])". Call it before the
// loader's or the plan's shape checks, which would name only the tensor;
// nil when no default was applied or none explains a mismatch. Only
// headers are read.
func (c *DeepseekConfig) CheckDefaults(t *model.Tree, src model.WeightSource) error {
	return c.set.check(t, src)
}

// isMoE reports whether decoder layer i has routed experts: from
// first_k_dense_replace on, every moe_layer_freq-th layer (DeepSeek's and
// vLLM's rule; HF 5.x ignores moe_layer_freq, which is 1 in every released
// config).
func (c *DeepseekConfig) isMoE(i int) bool {
	return c.moe != nil && i >= c.FirstKDenseReplace && i%c.MoeLayerFreq == 0
}

// hasDense reports whether a selected layer has a dense MLP.
func (c *DeepseekConfig) hasDense() bool {
	for i := c.layers.First; i <= c.layers.Last; i++ {
		if !c.isMoE(i) {
			return true
		}
	}
	return false
}

// hasMoE reports whether a selected layer has routed experts.
func (c *DeepseekConfig) hasMoE() bool {
	for i := c.layers.First; i <= c.layers.Last; i++ {
		if c.isMoE(i) {
			return true
		}
	}
	return false
}

// SelectLayers restricts the model to decoder layers r.First..r.Last
// (--load-layers): only they, the embeddings, the final norm and the LM
// head are built and loaded. Errors: LayerRange.Check's, naming the range
// and num_hidden_layers.
func (c *DeepseekConfig) SelectLayers(r model.LayerRange) error {
	if err := r.Check(c.NumHiddenLayers); err != nil {
		return err
	}
	c.layers = r
	return nil
}

// SetExpertParallel places whole experts on ranks (--ep) instead of
// splitting each expert's intermediate dimension. It fails for a model
// without routed experts.
func (c *DeepseekConfig) SetExpertParallel(on bool) error {
	if on && c.moe == nil {
		return fmt.Errorf("--ep: %s has no routed experts (n_routed_experts is null)", c.v.arch)
	}
	if c.moe != nil {
		c.moe.EP = on
	}
	return nil
}

// Validate checks the split over world ranks as vLLM requires it: heads
// (q_b_proj/q_proj, kv_b_proj, o_proj), intermediate_size of the dense
// layers, and moe_intermediate_size (tensor-parallel experts) or at least
// one expert per rank (--ep); shared experts are always tensor-parallel.
func (c *DeepseekConfig) Validate(world int) error {
	if world < 1 {
		return fmt.Errorf("--tp %d: the world size must be at least 1", world)
	}
	if c.NumAttentionHeads%world != 0 {
		return fmt.Errorf("num_attention_heads %d is not divisible by --tp %d (vLLM splits MLA by heads)", c.NumAttentionHeads, world)
	}
	if c.hasDense() && c.IntermediateSize%world != 0 {
		return fmt.Errorf("intermediate_size %d (dense layers) is not divisible by --tp %d", c.IntermediateSize, world)
	}
	if c.moe != nil && c.hasMoE() {
		m := c.moe
		if m.EP && m.Experts < world {
			return fmt.Errorf("--ep over %d ranks: n_routed_experts %d leaves a rank without experts", world, m.Experts)
		}
		if !m.EP && m.Inter%world != 0 {
			return fmt.Errorf("moe_intermediate_size %d is not divisible by --tp %d (tensor-parallel experts; --ep places whole experts instead)", m.Inter, world)
		}
		if m.SharedInter%world != 0 {
			return fmt.Errorf("moe_intermediate_size*n_shared_experts %d (shared experts) is not divisible by --tp %d", m.SharedInter, world)
		}
	}
	return nil
}
