package arch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"hsdb/engine/jsonerr"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// One rule for a config.json field that is absent or null, for every
// architecture, taken from HF transformers 5.x, whose config class vLLM
// reads config.json through:
//
//   - absent: the config class's default (LlamaConfig's are Llama-2-7B's
//     sizes, DeepseekV3Config's DeepSeek-V3's), as `from_pretrained` fills
//     it in. A default that sizes weights is recorded (Notes), and when
//     the checkpoint's tensors disagree with it the error says the value
//     was the class's default (CheckDefaults), since the file has no such
//     number in it. A field the class has no default for, which hsdb
//     cannot derive, is "missing".
//   - null: only where the class declares the field optional and gives
//     None a meaning hsdb follows (num_key_value_heads: the attention
//     heads; q_lora_rank: no query LoRA; sliding_window: no window; ...).
//     Anywhere else HF stores None and model construction then fails (or
//     its strict dataclass refuses the file), so hsdb refuses it naming
//     the field, instead of taking the default as if the field were absent.

// field is one config.json field an architecture reads, with its config
// class's default and what null means.
type field struct {
	name string
	// def is the class default used when the field is absent (int,
	// float64, bool or string); nil when the class has none, or derives
	// it (then null says how).
	def any
	// null says what an explicit null means, where the class accepts None
	// for the field and hsdb implements that meaning; "" refuses null.
	null string
	// kind is the JSON value wanted ("an integer"), for a field whose def
	// is nil; otherwise derived from def.
	kind string
	// shape marks a size of weights or a count of them: when the default
	// is applied it is recorded for Notes and CheckDefaults.
	shape bool
	// note marks a field that sizes nothing but changes what the model
	// computes (the MoE routing): when the default is applied it is
	// recorded for Notes, not for CheckDefaults.
	note bool
	// from names who supplies def when the config class has no such
	// field ("vLLM"); "" is the class.
	from string
}

// size is an integer field that sizes weights, with its class default.
func size(name string, def int) field { return field{name: name, def: def, shape: true} }

// opt is an integer field whose null (or absence, when def is nil) has a
// meaning.
func opt(name string, def any, null string) field {
	return field{name: name, def: def, null: null, kind: "an integer"}
}

// noted marks f as changing what the model computes (field.note).
func (f field) noted() field {
	f.note = true
	return f
}

// sizes marks f as sizing weights (field.shape).
func (f field) sizes() field {
	f.shape = true
	return f
}

// defaulted is a field that took its config class's default.
type defaulted struct {
	name  string
	value any
	shape bool   // field.shape: CheckDefaults may name it
	from  string // field.from: who supplies the default, "" the class
}

// fieldSet is what applyFields found: the defaults it applied, under the
// config class's name.
type fieldSet struct {
	class string // "LlamaConfig"
	defs  []defaulted
}

// applyFields returns raw with the class defaults of fields filled in for
// those absent, and an error naming the first field that is null where
// the class gives null no meaning, or absent with no default. raw is not
// modified.
func applyFields(raw map[string]json.RawMessage, class string, fields []field) (map[string]json.RawMessage, fieldSet, error) {
	out := make(map[string]json.RawMessage, len(raw)+len(fields))
	for k, v := range raw {
		out[k] = v
	}
	set := fieldSet{class: class}
	for _, f := range fields {
		v, present := raw[f.name]
		switch {
		case !present && f.def != nil:
			b, _ := json.Marshal(f.def)
			out[f.name] = b
			if f.shape || f.note {
				set.defs = append(set.defs, defaulted{f.name, f.def, f.shape, f.from})
			}
		case !present && f.null == "":
			return nil, set, fmt.Errorf("%s is missing; want %s (%s has no default for it)", f.name, f.want(), class)
		case present && jsonerr.IsNull(v) && f.null == "":
			return nil, set, fmt.Errorf("%s is null; want %s (%s)", f.name, f.want(), f.leaveOut(class))
		}
	}
	// The bounds model.ParseConfig checked on the file hold for the
	// defaults one by one, not always together: {"model_type":
	// "deepseek_v3", "num_hidden_layers": 4096} with DeepseekV3Config's 256
	// experts is a module tree of a million experts, which took 2 GB and
	// seconds to build before the plan refused it.
	if len(set.defs) > 0 {
		if err := model.CheckBounds(out, "with "+class+"'s defaults for the fields it leaves out"); err != nil {
			return nil, set, err
		}
	}
	return out, set, nil
}

// want is the JSON value f takes.
func (f field) want() string {
	if f.kind != "" {
		return f.kind
	}
	switch f.def.(type) {
	case int:
		return "an integer"
	case float64:
		return "a number"
	case bool:
		return "true or false"
	}
	return "a string"
}

// leaveOut says what leaving f out would do.
func (f field) leaveOut(class string) string {
	if f.def == nil {
		return class + " has no default for it"
	}
	if f.from != "" {
		class = f.from
	}
	if s, ok := f.def.(string); ok {
		return fmt.Sprintf("left out, %s's default %q applies", class, s)
	}
	return fmt.Sprintf("left out, %s's default %v applies", class, f.def)
}

// notes words the applied size defaults for a caller to print: "hidden_size
// 4096 is LlamaConfig's default (config.json has none)".
func (s fieldSet) notes() []string {
	var out []string
	for _, d := range s.defs {
		out = append(out, fmt.Sprintf("%s %v is %s's default (config.json has none)", d.name, d.value, d.by(s.class)))
	}
	return out
}

// by is who supplies d's default: its field's from, else the class.
func (d defaulted) by(class string) string {
	if d.from != "" {
		return d.from
	}
	return class
}

// hint adds to err, an error the architecture or the loader found after
// the defaults were applied (a split they make impossible, a tensor of
// another shape or missing), which defaults config.json left to the
// class: "(config.json leaves out num_key_value_heads: Qwen3Config's
// default 32)", so that a number the file does not hold is not left
// unexplained. err as it is when nil, when no default was applied, or
// when it already names its default (CheckDefaults).
func (s fieldSet) hint(err error) error {
	if err == nil || len(s.defs) == 0 || strings.Contains(err.Error(), "config.json has none") {
		return err
	}
	var parts []string
	for _, d := range s.defs {
		parts = append(parts, fmt.Sprintf("%s: %s's default %v", d.name, d.by(s.class), d.value))
	}
	return fmt.Errorf("%w (config.json leaves out %s)", err, strings.Join(parts, "; "))
}

// check compares the checkpoint's decoder layers (model.CheckpointLayers)
// with a defaulted num_hidden_layers, and every parameter of t that the
// checkpoint stores under one of its names (model.CheckpointNames) at
// another shape of the same rank with the applied size defaults: where a mismatched dimension is
// the value of a defaulted field, it returns an error (wrapping
// model.ErrWeight) naming the field, its default and the tensor. nil when
// no default was applied, or none explains a mismatch (the loader's own
// shape check then reports it). Only headers are read.
func (s fieldSet) check(t *model.Tree, src model.WeightSource) error {
	if len(s.defs) == 0 || src == nil || t == nil {
		return nil
	}
	// A defaulted layer count sizes no tensor: it is the count of
	// layers.N. the checkpoint's names hold (a source that lists them).
	if lister, ok := src.(interface{ Names() []string }); ok {
		for _, d := range s.defs {
			if n, ok := d.value.(int); ok && d.name == "num_hidden_layers" {
				if count, hi := model.CheckpointLayers(lister.Names()); hi >= 0 && count != n {
					return fmt.Errorf("%w: num_hidden_layers %d (%s's default: config.json has none) but the checkpoint holds %d decoder layers (layers 0-%d)",
						model.ErrWeight, n, s.class, count, hi)
				}
			}
		}
	}
	for _, p := range t.Params() {
		for _, n := range model.CheckpointNames(p.Name) {
			_, got, ok := src.Meta(n)
			if !ok {
				continue
			}
			if len(got) == len(p.Shape) && !slices.Equal(got, p.Shape) {
				if d, ok := s.explains(got, p.Shape); ok {
					return fmt.Errorf("%w: %s %v (%s's default: config.json has none) but tensor %s is %s in the checkpoint (the config implies %s)",
						model.ErrWeight, d.name, d.value, d.by(s.class), n, tensor.ShapeString(got), tensor.ShapeString(p.Shape))
				}
				// The first mismatch is no default's: the loader's shape
				// check names it (a later one a default happens to fit
				// would blame the wrong field).
				return nil
			}
			break
		}
	}
	return nil
}

// explains returns the defaulted size whose value is a dimension where
// got and want differ, or a factor of it (see below).
func (s fieldSet) explains(got, want []int) (defaulted, bool) {
	for i := range want {
		if got[i] == want[i] {
			continue
		}
		for _, d := range s.defs {
			v, ok := d.value.(int)
			if !ok || !d.shape || v <= 0 {
				continue
			}
			// The dimension is the default itself, or the default times a
			// width k > 1 that the stored dimension is a multiple of too
			// (q_proj's rows: num_attention_heads × head_dim).
			if v == want[i] || want[i]%v == 0 && want[i]/v > 1 && got[i]%(want[i]/v) == 0 {
				return d, true
			}
		}
	}
	return defaulted{}, false
}
