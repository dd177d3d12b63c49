package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"hsdb/engine/tensor"
)

// The bounds every config.json is checked against before an architecture
// reads it (ParseConfig calls CheckBounds on the object it hands to
// Architecture.Parse, so every architecture gets them): a size field far
// beyond any released model is a corrupt or hostile file, and using it
// would build a module tree of a billion layers or plan exabytes. The
// limits are an order of magnitude or more above the largest released
// models (Llama-3.1-405B: 126 layers, hidden 16384, 128 heads; DeepSeek-V3:
// 256 routed experts, intermediate 18432; Kimi-K2: 384 experts; Gemma 3:
// vocabulary 262144; Llama 4 Scout: 10M positions).

// ErrConfigLimit is wrapped by every bound violation (a *LimitError).
var ErrConfigLimit = errors.New("config.json value out of range")

// SizeLimit is the largest value hsdb accepts for one integer field of
// config.json.
type SizeLimit struct {
	Field string
	Max   int64
}

// SizeLimits lists the bounded fields in the order they are checked. A
// field that is absent or null is not checked (the architecture's default
// or its own "must be positive" check applies).
var SizeLimits = []SizeLimit{
	{"num_hidden_layers", 1 << 12},
	{"num_attention_heads", 1 << 12},
	{"num_key_value_heads", 1 << 12},
	{"hidden_size", 1 << 18},
	{"intermediate_size", 1 << 20},
	{"moe_intermediate_size", 1 << 20},
	{"shared_expert_intermediate_size", 1 << 20},
	{"head_dim", 1 << 12},
	{"qk_nope_head_dim", 1 << 12},
	{"qk_rope_head_dim", 1 << 12},
	{"v_head_dim", 1 << 12},
	{"q_lora_rank", 1 << 16},
	{"kv_lora_rank", 1 << 16},
	{"vocab_size", 1 << 24},
	{"n_routed_experts", 1 << 14},
	{"num_experts", 1 << 14},
	{"num_local_experts", 1 << 14},
	{"num_experts_per_tok", 1 << 14},
	{"n_shared_experts", 1 << 8},
	{"n_group", 1 << 14},
	{"topk_group", 1 << 14},
	{"first_k_dense_replace", 1 << 12},
	{"moe_layer_freq", 1 << 12},
	{"num_nextn_predict_layers", 1 << 12},
	{"max_window_layers", 1 << 12},
	{"sliding_window", 1 << 28},
	{"max_position_embeddings", 1 << 28},
}

// sizeMin is the least value of the SizeLimits fields that may not be 0
// (every other one may): no position at all would leave every token out
// of range, and YaRN's default factor (max_position_embeddings /
// original_max_position_embeddings) would be 0.
var sizeMin = map[string]int64{"max_position_embeddings": 1}

// MaxExpertLayers bounds num_hidden_layers × (routed experts + 1), which
// the module tree's parameter count follows (DeepSeek-V3: 61 × 257 ≈
// 1.6e4, Kimi-K2: 61 × 385 ≈ 2.3e4); the tree of the bound holds about
// 4e5 parameters (tens of MB).
const MaxExpertLayers = 1 << 17

// MaxTreeEntries bounds layers × (routed experts + 1) × world size, the
// number of per-rank shard entries a module tree holds (DeepSeek-V3 at
// --tp 8: 61 × 257 × 8 ≈ 1.3e5; at --tp 64, 1e6 entries take about 130 MB
// and 0.4 s to plan), so that building the tree for a plan or a load takes
// bounded memory and time.
const MaxTreeEntries = 1 << 22

// ConfigDTypes are the values config.json's dtype / torch_dtype may take
// (torch's names; HF writes them as torch_dtype, transformers 5 as dtype).
var ConfigDTypes = []string{"float32", "bfloat16", "float16", "float64"}

// LimitError says which config.json field is out of range, its value as
// written, and what was expected. Implied, when set, says what the
// checkpoint's weights imply for the field (LoadDir adds it).
type LimitError struct {
	Where   string // the object: "config.json", "config.json: text_config"
	Field   string // "num_hidden_layers"
	Value   string // as written in config.json: "1e9", "1099511627776"
	Want    string // "at most 4096", "an integer", "one of float32, ..."
	Implied string // "the checkpoint holds layers 0-2 (3 layers)", or ""
}

// Error renders "config.json: num_hidden_layers 1e9 is out of range (want at
// most 4096); the checkpoint holds 3 decoder layers (layers 0-2)".
func (e *LimitError) Error() string {
	s := fmt.Sprintf("%s %s is out of range (want %s)", e.Field, e.Value, e.Want)
	if e.Where != "" {
		s = e.Where + ": " + s
	}
	if e.Implied != "" {
		s += "; " + e.Implied
	}
	return s
}

// Unwrap returns ErrConfigLimit.
func (e *LimitError) Unwrap() error { return ErrConfigLimit }

// CheckBounds checks the size fields (SizeLimits) and dtype fields of a
// decoded config.json object (or the text_config of a wrapper) before any
// of them is used: each present size must be a non-negative integer (JSON
// integer syntax or an integral number such as 1e3) no larger than its
// limit (max_position_embeddings at least 1); dtype and torch_dtype must be one of ConfigDTypes; and layers ×
// (routed experts + 1) must stay within MaxExpertLayers. The first
// violation is returned as a *LimitError naming the field, in the object
// where names ("config.json", "config.json: text_config").
func CheckBounds(raw map[string]json.RawMessage, where string) error {
	err := checkBounds(raw)
	if le, ok := err.(*LimitError); ok {
		le.Where = where
	}
	return err
}

func checkBounds(raw map[string]json.RawMessage) error {
	vals := map[string]int64{}
	for _, l := range SizeLimits {
		v, ok := raw[l.Field]
		if !ok {
			continue
		}
		n, present, err := sizeValue(l.Field, v, sizeMin[l.Field], l.Max)
		if err != nil {
			return err
		}
		if present {
			vals[l.Field] = n
		}
	}
	for _, f := range []string{"dtype", "torch_dtype"} {
		if err := checkDType(f, raw[f]); err != nil {
			return err
		}
	}
	experts := max(vals["n_routed_experts"], vals["num_experts"], vals["num_local_experts"])
	if layers := vals["num_hidden_layers"]; layers*(experts+1) > MaxExpertLayers {
		return &LimitError{Field: "num_hidden_layers", Value: fmt.Sprint(layers),
			Want: fmt.Sprintf("num_hidden_layers × (routed experts + 1) at most %d; with %d experts that is at most %d layers", MaxExpertLayers, experts, MaxExpertLayers/(experts+1))}
	}
	return nil
}

// sizeValue decodes one size field: present is false for null; an error
// names the field unless the value is an integer in [least, limit].
func sizeValue(field string, v json.RawMessage, least, limit int64) (n int64, present bool, err error) {
	text := strings.TrimSpace(string(v))
	if text == "null" {
		return 0, false, nil
	}
	want := fmt.Sprintf("an integer from %d to %d", least, limit)
	if text == "" || (text[0] != '-' && (text[0] < '0' || text[0] > '9')) {
		return 0, false, &LimitError{Field: field, Value: text, Want: want}
	}
	// Exact decimal value of the JSON number (1e9 and 1000000000 alike;
	// big.Float so that 1e400 or 2^70 neither overflows nor rounds into
	// range).
	f, _, perr := big.ParseFloat(text, 10, 256, big.ToNearestEven)
	if perr != nil {
		return 0, false, &LimitError{Field: field, Value: text, Want: want}
	}
	if !f.IsInt() {
		return 0, false, &LimitError{Field: field, Value: text, Want: want}
	}
	if f.Cmp(new(big.Float).SetInt64(least)) < 0 {
		return 0, false, &LimitError{Field: field, Value: text, Want: want}
	}
	if f.Cmp(new(big.Float).SetInt64(limit)) > 0 {
		return 0, false, &LimitError{Field: field, Value: text, Want: fmt.Sprintf("at most %d", limit)}
	}
	i, _ := f.Int64()
	return i, true, nil
}

// checkDType checks a dtype field: absent, null or one of ConfigDTypes
// (with or without torch's "torch." prefix).
func checkDType(field string, v json.RawMessage) error {
	if v == nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	want := "one of " + strings.Join(ConfigDTypes, ", ")
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return &LimitError{Field: field, Value: string(v), Want: want}
	}
	dt, err := tensor.ParseDType(s)
	if err != nil || (dt != tensor.F32 && dt != tensor.BF16 && dt != tensor.F16 && dt != tensor.F64) {
		return &LimitError{Field: field, Value: fmt.Sprintf("%q", s), Want: want}
	}
	return nil
}

// CheckTreeSize returns an error naming the fields when a module tree for
// d split over world ranks would hold more than MaxTreeEntries per-rank
// parameter entries (layers × (routed experts + 1) × world); call it
// before Config.Tree.
func CheckTreeSize(d *Dims, world int) error {
	experts := int64(d.Named["n_routed_experts"])
	entries := float64(d.Layers) * float64(experts+1) * float64(world)
	if entries > MaxTreeEntries || math.IsNaN(entries) {
		return fmt.Errorf("%w: num_hidden_layers %d × (n_routed_experts %d + 1) × world size %d = %.3g parameter shards, more than hsdb plans (%d)",
			ErrConfigLimit, d.Layers, experts, world, entries, MaxTreeEntries)
	}
	return nil
}
