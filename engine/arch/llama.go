package arch

import (
	"encoding/json"
	"fmt"

	"hsdb/engine/jsonerr"
	"hsdb/engine/model"
	"hsdb/engine/nn"
)

// Llama-family decoder (HF modeling_llama.py, vLLM model_executor/models/
// llama.py): RMSNorm → attention with RoPE and grouped-query heads → RMSNorm
// → SwiGLU MLP, with vLLM's un-summed (hidden_states, residual) pair and fused
// add + RMSNorm. Mistral, Qwen2 and Qwen3 are this decoder with variant
// switches (see mistral.go, qwen2.go, qwen3.go).

// Llama: HF LlamaForCausalLM (modeling_llama.py); vLLM LlamaForCausalLM.
// Absent fields take LlamaConfig's defaults (Llama-2-7B's sizes).
var llamaArch = &llamaVariant{arch: "LlamaForCausalLM", modelClass: "LlamaModel", layerClass: "LlamaDecoderLayer",
	attnClass: "LlamaAttention", mlpClass: "LlamaMLP", defTheta: 10000, class: "LlamaConfig",
	fields: llamaFields(llamaSizes{vocab: 32000, hidden: 4096, inter: 11008, layers: 32, heads: 32, maxPos: 2048},
		opt("num_key_value_heads", nil, "num_attention_heads"), opt("head_dim", nil, "hidden_size / num_attention_heads"),
		field{name: "attention_bias", def: false}, field{name: "mlp_bias", def: false})}

func init() { registerLlama(llamaArch, "llama") }

// llamaVariant holds what distinguishes the Llama-family architectures.
type llamaVariant struct {
	arch, modelClass, layerClass, attnClass, mlpClass string
	qkvBias                                           bool // Qwen2: q/k/v projections always have a bias
	qkNorm                                            bool // Qwen3: RMSNorm on each q and k head before RoPE
	window                                            func(c *LlamaConfig, layer int) int
	defTheta                                          float64
	class                                             string  // the HF config class: "LlamaConfig"
	fields                                            []field // its defaults and nulls (fields.go)
}

// llamaSizes are the size defaults every Llama-family config class has.
type llamaSizes struct{ vocab, hidden, inter, layers, heads, maxPos int }

// llamaFields lists the fields every Llama-family config class has, with
// the class's defaults s, then the class's own.
func llamaFields(s llamaSizes, own ...field) []field {
	return append([]field{size("vocab_size", s.vocab), size("hidden_size", s.hidden), size("intermediate_size", s.inter),
		size("num_hidden_layers", s.layers), size("num_attention_heads", s.heads), {name: "max_position_embeddings", def: s.maxPos},
		{name: "hidden_act", def: "silu"}, {name: "rms_norm_eps", def: 1e-6}, {name: "tie_word_embeddings", def: false}}, own...)
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

	v      *llamaVariant
	dims   model.Dims
	layers *model.LayerRange // SelectLayers; nil: all
	set    fieldSet          // the class defaults applied
}

func registerLlama(v *llamaVariant, modelTypes ...string) {
	model.Register(model.Architecture{Name: v.arch, ModelTypes: modelTypes, Parse: func(raw map[string]json.RawMessage) (model.Config, error) {
		return parseLlama(raw, v)
	}})
}

func parseLlama(raw map[string]json.RawMessage, v *llamaVariant) (cfg *LlamaConfig, err error) {
	if err := checkArchitectures(raw, v.arch); err != nil {
		return nil, err
	}
	full, set, err := applyFields(raw, v.class, v.fields)
	if err != nil {
		return nil, fmt.Errorf("config.json (%s): %w", v.arch, err)
	}
	c := &LlamaConfig{v: v, set: set}
	data, _ := json.Marshal(full)
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("config.json (%s): %w", v.arch, jsonerr.Explain(err))
	}
	// Errors from here on are of the values, defaults included: each says
	// which fields took a default (a JSON type error above is the file's).
	defer func() { err = set.hint(err) }()
	c.v, c.set = v, set
	// The sizes are positive here: model.CheckBounds refused a 0 written
	// out (HF keeps it, and its attention then divides by zero) and the
	// class defaults are positive; num_key_value_heads and head_dim left
	// out or null take HF's derivations.
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
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
	if c.SlidingWindow != nil && *c.SlidingWindow == 0 && c.usesWindow() {
		// null is "no window"; a window of 0 positions leaves a token no key
		// to attend to (HF's sliding mask then masks every one), so hsdb's
		// full attention would silently compute another model.
		return nil, fmt.Errorf("config.json (%s): sliding_window 0 leaves no position to attend to (want a positive window, or null for none)", v.arch)
	}
	dt := model.ConfigDType(c.DTypeField, c.TorchDType)
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

// Notes says which sizes took the config class's default because
// config.json has none ("hidden_size 4096 is LlamaConfig's default
// (config.json has none)"), for the caller to print beside a plan or a
// load; nil when none did.
func (c *LlamaConfig) Notes() []string { return c.set.notes() }

// Hint adds to err (an error found after parsing: a tensor of another
// shape or missing) the fields config.json left to the class's defaults,
// unless it names its default already; err itself when none was applied.
func (c *LlamaConfig) Hint(err error) error { return c.set.hint(err) }

// CheckDefaults returns an error (wrapping model.ErrWeight) when a tensor
// of src disagrees with tree t's shape in a dimension that a class default
// sized: "hidden_size 4096 (LlamaConfig's default: config.json has none)
// but tensor model.embed_tokens.weight is [101, 96] in the checkpoint (the
// config implies [101, 4096])". Call it before the loader's or the plan's
// shape checks, which would name only the tensor; nil when no default was
// applied or none explains a mismatch. Only headers are read.
func (c *LlamaConfig) CheckDefaults(t *model.Tree, src model.WeightSource) error {
	return c.set.check(t, src)
}

// Validate checks the split over world ranks (heads, kv heads,
// intermediate_size), as vLLM's linear layers require.
func (c *LlamaConfig) Validate(world int) error {
	if world < 1 {
		return fmt.Errorf("--tp %d: the world size must be at least 1", world)
	}
	if _, err := model.PlanHeads(c.NumAttentionHeads, c.NumKeyValueHeads, world); err != nil {
		return c.set.hint(err) // Qwen3Config's 32 kv heads against a file's 8 heads
	}
	if c.IntermediateSize%world != 0 {
		return c.set.hint(fmt.Errorf("intermediate_size %d is not divisible by --tp %d", c.IntermediateSize, world))
	}
	return nil
}

// usesWindow reports whether some layer attends through sliding_window
// (Mistral: every layer when it is set; Qwen2/3: with use_sliding_window,
// the layers from max_window_layers on).
func (c *LlamaConfig) usesWindow() bool {
	if c.v.window == nil {
		return false
	}
	probe, one := *c, 1
	probe.SlidingWindow = &one
	for i := range c.NumHiddenLayers {
		if probe.window(i) != 0 {
			return true
		}
	}
	return false
}

func (c *LlamaConfig) window(layer int) int {
	if c.v.window == nil {
		return 0
	}
	return c.v.window(c, layer)
}

// SelectLayers restricts the model to decoder layers r.First..r.Last
// (--load-layers, a pipeline stage): only they, the embeddings, the final
// norm and the LM head are built and loaded. Errors: LayerRange.Check's,
// naming the range and num_hidden_layers.
func (c *LlamaConfig) SelectLayers(r model.LayerRange) error {
	if err := r.Check(c.NumHiddenLayers); err != nil {
		return err
	}
	c.layers = &r
	return nil
}

// Tree builds vLLM's module tree for world ranks: LlamaForCausalLM >
// LlamaModel > (VocabParallelEmbedding, LlamaDecoderLayer × L, RMSNorm) and
// ParallelLMHead.
func (c *LlamaConfig) Tree(world int) *model.Tree { return nn.Tree(c.v.arch, world, c.build) }

// Load reads rank l.Rank's shard of every weight into the blocks of tree t.
func (c *LlamaConfig) Load(l *model.Loader, t *model.Tree) (model.RankModel, error) {
	return nn.Load(l, t, c.build)
}

// build declares the model once (vLLM LlamaForCausalLM): its tree, its
// loading and its sites all come from here.
func (c *LlamaConfig) build(vb nn.Builder) *nn.CausalLM {
	H, eps := c.HiddenSize, c.RMSNormEps
	invFreq, mscale := c.RoPE.InvFreq(c.HeadDimField)
	lm := nn.LM{ModelClass: c.v.modelClass, Vocab: c.VocabSize, Hidden: H, Eps: eps, Tied: c.TieWordEmbeddings}
	return nn.NewCausalLM(vb, lm, func(m nn.Builder) []*nn.DecoderLayer {
		var layers []*nn.DecoderLayer
		first, last := 0, c.NumHiddenLayers-1
		if c.layers != nil {
			first, last = c.layers.First, c.layers.Last
		}
		for i := first; i <= last; i++ {
			attn := nn.AttentionConfig{Class: c.v.attnClass, Hidden: H, Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads,
				HeadDim: c.HeadDimField, QKVBias: c.v.qkvBias || c.AttentionBias, OBias: c.AttentionBias, QKNorm: c.v.qkNorm, Eps: eps,
				Layer: i, Window: c.window(i), InvFreq: invFreq, MScale: mscale}
			layers = append(layers, nn.NewDecoderLayer(m.Pp("layers").PpI(i), c.v.layerClass, H, eps,
				func(l nn.Builder) nn.Block { return nn.NewAttention(l.Pp("self_attn"), attn) },
				func(l nn.Builder) nn.Block {
					return nn.NewGatedMLP(l.Pp("mlp"), c.v.mlpClass, H, c.IntermediateSize, c.MLPBias, true)
				}))
		}
		return layers
	})
}
