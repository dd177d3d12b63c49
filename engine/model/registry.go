package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"hsdb/engine/backend"
	"hsdb/engine/jsonerr"
	"hsdb/engine/tensor"
)

// Dims are the sizes every architecture reports, named as in config.json.
type Dims struct {
	Arch         string       // HF architectures[0]: "LlamaForCausalLM"
	ModelType    string       // config.json model_type
	Hidden       int          // hidden_size
	Layers       int          // num_hidden_layers
	Vocab        int          // vocab_size
	Heads        int          // num_attention_heads
	KVHeads      int          // num_key_value_heads
	HeadDim      int          // head_dim (query/key width per head)
	Intermediate int          // intermediate_size
	MaxPos       int          // max_position_embeddings
	DType        tensor.DType // dtype (or torch_dtype): ConfigDType
	Tied         bool         // tie_word_embeddings
	// Named lists every named size of the config (hidden_size, head_dim,
	// kv_lora_rank, ...) so that a wrong capture shape can be explained in
	// the model's terms.
	Named map[string]int
}

// ConfigDType is the dtype config.json declares for the weights: its
// "dtype" field (transformers 5's name) over "torch_dtype" (earlier
// transformers'), F32 when neither is set. ParseConfig has already refused
// a value outside ConfigDTypes, so a name that does not parse is skipped
// as absent.
func ConfigDType(dtype, torchDType string) tensor.DType {
	for _, s := range []string{dtype, torchDType} {
		if s != "" {
			if d, err := tensor.ParseDType(s); err == nil {
				return d
			}
		}
	}
	return tensor.F32
}

// Config is an architecture's typed view of config.json.
type Config interface {
	// Dims returns the common sizes.
	Dims() *Dims
	// Validate checks that the model can be split over world ranks; errors
	// name the field and the numbers ("num_attention_heads 6 is not
	// divisible by --tp 4").
	Validate(world int) error
	// Tree builds the module tree and sites for world ranks.
	Tree(world int) *Tree
	// Load reads one rank's weights through l (l.Rank, l.World) for the
	// given tree and returns the rank's model.
	Load(l *Loader, t *Tree) (RankModel, error)
}

// RankModel is one rank's share of a model, ready to run.
type RankModel interface {
	// Forward runs one step of batch b on rank r, emitting every site of
	// the tree in order, and returns the logits of b.LogitRows() gathered
	// over ranks: [rows, vocab] (float32 on the device).
	Forward(r *Rank, b *Batch) backend.Tensor
}

// Architecture registers how to read one HF architecture.
type Architecture struct {
	Name       string   // HF architectures[0], e.g. "LlamaForCausalLM"
	ModelTypes []string // config.json model_type values that mean it
	// Parse decodes config.json; raw is the decoded top-level object.
	Parse func(raw map[string]json.RawMessage) (Config, error)
}

var registry = map[string]*Architecture{}

// Register adds an architecture; registering a name twice panics (at start,
// as candle's and ollama's registries do).
func Register(a Architecture) {
	if _, dup := registry[a.Name]; dup {
		panic("model: architecture " + a.Name + " registered twice")
	}
	registry[a.Name] = &a
}

// Architectures returns the registered names, sorted.
func Architectures() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ParseConfig decodes config.json bytes and picks the architecture by
// architectures[0], else by model_type. Sizes and dtypes are checked
// against CheckBounds before the architecture reads them (a *LimitError
// wrapping ErrConfigLimit). A config that nests the language
// model (text_config, as multimodal wrappers do) is unwrapped; skipped
// reports what was left out.
func ParseConfig(data []byte) (cfg Config, skipped string, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, "", configSyntax(data, err)
	}
	if raw == nil { // the JSON literal null decodes to a nil map without error
		return nil, "", errors.New("config.json is JSON null, want an object")
	}
	// architectures as a wrapper's is never decoded by an architecture:
	// its type is checked here, for flat configs and wrappers alike.
	if v, ok := raw["architectures"]; ok && jsonerr.Kind(v) != "array" && jsonerr.Kind(v) != "null" {
		return nil, "", fmt.Errorf("config.json: architectures: got a JSON %s, want an array of strings", jsonerr.Kind(v))
	}
	var head struct {
		Architectures []string `json:"architectures"`
		ModelType     string   `json:"model_type"`
	}
	_ = json.Unmarshal(data, &head)
	if a := lookup(head.Architectures, head.ModelType); a != nil {
		if err := CheckBounds(raw, "config.json"); err != nil {
			return nil, "", err
		}
		cfg, err := a.Parse(raw)
		return cfg, "", err
	}
	if tc, ok := raw["text_config"]; ok {
		var inner map[string]json.RawMessage
		if t := strings.TrimSpace(string(tc)); !strings.HasPrefix(t, "{") {
			if len(t) > 40 || strings.ContainsAny(t, "\r\n") {
				// A list holding the whole config (pretty-printed) made
				// a message of 40 bytes cut across its lines.
				t = fmt.Sprintf("a JSON %s of %d bytes", jsonerr.Kind(tc), len(t))
			}
			return nil, "", fmt.Errorf("config.json: text_config is %s, want a JSON object (the language model's config)", t)
		}
		if err := json.Unmarshal(tc, &inner); err != nil {
			return nil, "", fmt.Errorf("config.json text_config: %w", err)
		}
		var ih struct {
			Architectures []string `json:"architectures"`
			ModelType     string   `json:"model_type"`
		}
		_ = json.Unmarshal(tc, &ih)
		if a := lookup(ih.Architectures, ih.ModelType); a != nil {
			if err := CheckBounds(inner, "config.json: text_config"); err != nil {
				return nil, "", err
			}
			// The wrapper's own dtype fields (transformers sets the whole
			// model's dtype there) are checked as a flat config's are.
			if err := CheckBounds(raw, "config.json"); err != nil {
				return nil, "", err
			}
			cfg, err := a.Parse(inner)
			if err != nil {
				err = inTextConfig{err}
			}
			why := fmt.Sprintf("%v (model_type %q) wraps the language model in text_config; only it is loaded", head.Architectures, head.ModelType)
			if _, ok := raw["vision_config"]; ok {
				why += " (the vision_config model's tensors are not read)"
			}
			return cfg, why, err
		}
		// The wrapper is recognised by its text_config; the language
		// model in it is what hsdb does not know.
		return nil, "", fmt.Errorf("config.json: text_config: architecture %v (model_type %q) is not supported; hsdb knows %s", ih.Architectures, ih.ModelType, strings.Join(Architectures(), ", "))
	}
	if _, ok := raw["text_config"]; !ok && isWrapper(head.Architectures, raw) {
		return nil, "", fmt.Errorf("config.json: %v (model_type %q) is a multimodal wrapper but has no text_config: the language model's config (model_type, sizes, quantization_config) belongs there", head.Architectures, head.ModelType)
	}
	return nil, "", fmt.Errorf("config.json: architecture %v (model_type %q) is not supported; hsdb knows %s", head.Architectures, head.ModelType, strings.Join(Architectures(), ", "))
}

func lookup(archs []string, modelType string) *Architecture {
	for _, n := range archs {
		if a, ok := registry[n]; ok {
			return a
		}
	}
	for _, a := range registry {
		for _, mt := range a.ModelTypes {
			if mt == modelType && modelType != "" {
				return a
			}
		}
	}
	return nil
}

// isWrapper reports whether a config describes a multimodal wrapper around
// a language model (Kimi-K2.5's KimiK25ForConditionalGeneration, HF's
// *ForConditionalGeneration classes): a vision_config, or an architecture
// named ForConditionalGeneration.
func isWrapper(archs []string, raw map[string]json.RawMessage) bool {
	if _, ok := raw["vision_config"]; ok {
		return true
	}
	for _, a := range archs {
		if strings.HasSuffix(a, "ForConditionalGeneration") {
			return true
		}
	}
	return false
}

// Lens is one rank's final norm and LM head, for the logit lens
// (nostalgebraist 2020: the final norm and unembedding applied to an inner
// layer's stream): Norm [hidden] with Eps (the model's last RMSNorm), Head
// [vocab_r, hidden], the rank's rows [Vocab[0], Vocab[1]) of vLLM's padded
// vocabulary, of which those below VocabSize are real tokens.
type Lens struct {
	Norm      backend.Tensor
	Eps       float32
	Head      backend.Tensor
	Vocab     [2]int
	VocabSize int
}

// LensModel is a RankModel that exposes its final norm and LM head.
type LensModel interface {
	Lens() Lens
}

// inTextConfig is an error an architecture found in a wrapper's
// text_config, which names config.json as if flat: it says text_config
// ("config.json text_config (DeepseekV3ForCausalLM): hidden_size is
// null; ..."), and unwraps to the error itself.
type inTextConfig struct{ err error }

func (e inTextConfig) Error() string {
	msg := e.err.Error()
	if rest, ok := strings.CutPrefix(msg, "config.json"); ok {
		return "config.json text_config" + rest
	}
	return "config.json text_config: " + msg
}

func (e inTextConfig) Unwrap() error { return e.err }
