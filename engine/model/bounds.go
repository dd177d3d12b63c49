package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"hsdb/engine/jsonerr"
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

// SizeLimit is the range hsdb accepts for one integer field of
// config.json: Min to Max.
type SizeLimit struct {
	Field string
	Min   int64 // 1 for a size no architecture can take as 0; else 0
	Max   int64
}

// SizeLimits lists the bounded fields in the order they are checked. A
// field that is absent or null is not checked (the architecture's config
// class default, or its meaning of null, applies). Min is 1 for every
// size that no registered architecture accepts as 0 (a layer count, a
// width, a head or expert count, a rank: HF keeps a 0 and model
// construction or attention then fails; no position at all leaves every
// token out of range and makes YaRN's default factor 0), so that the
// range the error states is the one accepted; 0 stays allowed where it
// means none (n_shared_experts, first_k_dense_replace, max_window_layers,
// sliding_window where no layer uses it, ...).
var SizeLimits = []SizeLimit{
	{"num_hidden_layers", 1, 1 << 12},
	{"num_attention_heads", 1, 1 << 12},
	{"num_key_value_heads", 1, 1 << 12},
	{"hidden_size", 1, 1 << 18},
	{"intermediate_size", 1, 1 << 20},
	{"moe_intermediate_size", 1, 1 << 20},
	{"shared_expert_intermediate_size", 0, 1 << 20},
	{"head_dim", 1, 1 << 12},
	{"qk_nope_head_dim", 1, 1 << 12},
	{"qk_rope_head_dim", 1, 1 << 12},
	{"v_head_dim", 1, 1 << 12},
	{"q_lora_rank", 1, 1 << 16},
	{"kv_lora_rank", 1, 1 << 16},
	{"vocab_size", 1, 1 << 24},
	{"n_routed_experts", 1, 1 << 14},
	{"num_experts", 0, 1 << 14},
	{"num_local_experts", 0, 1 << 14},
	{"num_experts_per_tok", 1, 1 << 14},
	{"n_shared_experts", 0, 1 << 8},
	{"n_group", 1, 1 << 14},
	{"topk_group", 1, 1 << 14},
	{"first_k_dense_replace", 0, 1 << 12},
	{"moe_layer_freq", 1, 1 << 12},
	{"num_nextn_predict_layers", 0, 1 << 12},
	{"max_window_layers", 0, 1 << 12},
	{"sliding_window", 0, 1 << 28},
	{"max_position_embeddings", 1, 1 << 28},
}

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

// LimitError says which config.json field is out of range or of the
// wrong JSON type, its value as written, and what was expected. Implied,
// when set, says what the checkpoint's weights imply for the field
// (LoadDir adds it).
type LimitError struct {
	Where string // the object: "config.json", "config.json: text_config"
	Field string // "num_hidden_layers"
	Value string // as written in config.json: "1e9", "1099511627776"
	// Kind is the JSON type of a value that is not of the type wanted
	// ("string" for "96" where an integer belongs); "" for a value of the
	// right type that is out of range.
	Kind string
	// Problem words what is wrong with a value of the right type: "" is
	// "is out of range"; "is not an integer" (2.5), "is not supported"
	// (a dtype name hsdb does not read).
	Problem string
	Want    string // "at most 4096", "an integer from 1 to 4096", "one of float32, ..."
	Implied string // "the checkpoint holds layers 0-2 (3 layers)", or ""
}

// Error renders "config.json: num_hidden_layers 1e9 is out of range (want at
// most 4096); the checkpoint holds 3 decoder layers (layers 0-2)", or for
// a value of another JSON type "config.json: hidden_size: got a JSON
// string "96", want an integer from 1 to 262144".
func (e *LimitError) Error() string {
	var s string
	switch {
	case e.Kind != "":
		got := "a JSON " + e.Kind
		if e.Kind == "string" || e.Kind == "number" || e.Kind == "boolean" {
			got += " " + clip(e.Value)
		}
		s = fmt.Sprintf("%s: got %s, want %s", e.Field, got, e.Want)
	case e.Problem != "":
		s = fmt.Sprintf("%s %s %s (want %s)", e.Field, e.Value, e.Problem, e.Want)
	default:
		s = fmt.Sprintf("%s %s is out of range (want %s)", e.Field, e.Value, e.Want)
	}
	if e.Where != "" {
		s = e.Where + ": " + s
	}
	if e.Implied != "" {
		s += "; " + e.Implied
	}
	return s
}

// maxQuoted is the most bytes of a value LimitError quotes; a longer one is
// clipped and its length given.
const maxQuoted = 40

// clip returns v, or its first maxQuoted bytes and its length when longer.
func clip(v string) string {
	if len(v) <= maxQuoted {
		return v
	}
	return fmt.Sprintf("%s... (%d bytes)", v[:maxQuoted], len(v))
}

// Unwrap returns ErrConfigLimit.
func (e *LimitError) Unwrap() error { return ErrConfigLimit }

// CheckBounds checks the size fields (SizeLimits) and dtype fields of a
// decoded config.json object (or the text_config of a wrapper) before any
// of them is used: each present size must be an integer (JSON integer
// syntax or an integral number such as 1e3) within its range (SizeLimit:
// Min to Max); dtype and torch_dtype must be one of ConfigDTypes; and
// layers × (routed experts + 1) must stay within MaxExpertLayers. The first
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
		n, present, err := sizeValue(l.Field, v, l.Min, l.Max)
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
// names the field unless the value is an integer in [least, limit]: a
// value of another JSON type is called by its type, a number that is no
// integer says so, and one beyond the range states the range.
func sizeValue(field string, v json.RawMessage, least, limit int64) (n int64, present bool, err error) {
	text := strings.TrimSpace(string(v))
	if text == "null" {
		return 0, false, nil
	}
	want := fmt.Sprintf("an integer from %d to %d", least, limit)
	if kind := jsonerr.Kind(v); kind != "number" {
		return 0, false, &LimitError{Field: field, Value: text, Kind: kind, Want: want}
	}
	// Exact decimal value of the JSON number (1e9 and 1000000000 alike;
	// big.Float so that 1e400 or 2^70 neither overflows nor rounds into
	// range).
	f, _, perr := big.ParseFloat(text, 10, 256, big.ToNearestEven)
	if perr != nil { // not JSON: ParseConfig has decoded it
		return 0, false, &LimitError{Field: field, Value: clip(text), Problem: "is not a number", Want: want}
	}
	if !f.IsInt() {
		return 0, false, &LimitError{Field: field, Value: clip(text), Problem: "is not an integer", Want: want}
	}
	if f.Cmp(new(big.Float).SetInt64(least)) < 0 {
		return 0, false, &LimitError{Field: field, Value: clip(text), Want: want}
	}
	if f.Cmp(new(big.Float).SetInt64(limit)) > 0 {
		return 0, false, &LimitError{Field: field, Value: clip(text), Want: fmt.Sprintf("at most %d", limit)}
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
		return &LimitError{Field: field, Value: strings.TrimSpace(string(v)), Kind: jsonerr.Kind(v), Want: "a string, " + want}
	}
	dt, err := tensor.ParseDType(s)
	if err != nil || (dt != tensor.F32 && dt != tensor.BF16 && dt != tensor.F16 && dt != tensor.F64) {
		return &LimitError{Field: field, Value: clip(fmt.Sprintf("%q", s)), Problem: "is not supported", Want: want}
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
