package quant

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"hsdb/engine/jsonerr"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// compressed-tensors' pack-quantized format (neuralmagic/compressed-tensors:
// compressors/quantized_compressors/pack_quantized.py for the tensors,
// utils/match.py for which modules a config group and the ignore list
// select), as Kimi-K2-Thinking and Kimi-K2.5 ship their routed experts:
// W4A16, symmetric int4 with one scale per group of input columns. Per
// quantized linear module M the checkpoint holds
//
//	M.weight_packed  I32 [out, ceil(in/8)]  q+8 for q in [-8, 7], column 8w+i in bits [4i, 4i+4)
//	M.weight_scale   BF16 [out, in/group_size]
//	M.weight_shape   I32 (or I64) [2] = [out, in]
//
// and the weight is (((word >> 4i) & 0xF) − 8) · scale (tensor.QuantInt4Group).
// Modules the config does not quantize keep their dense M.weight.

// compressedWeights is one config group's "weights" quantization arguments
// (compressed_tensors.quantization.QuantizationArgs).
type compressedWeights struct {
	NumBits   int     `json:"num_bits"`
	Type      string  `json:"type"`
	Symmetric bool    `json:"symmetric"`
	Strategy  string  `json:"strategy"`
	GroupSize *int    `json:"group_size"`
	Dynamic   bool    `json:"dynamic"`
	Actorder  *string `json:"actorder"`
}

// compressedWeightsJSON is a group's "weights" as written: every field may
// be absent or null, and QuantizationArgs fills it in (num_bits 8, type
// "int", symmetric true, strategy from group_size, dynamic false, actorder
// None), lowercases type, strategy and actorder, and reads actorder false
// as None and true as "group" (compressed-tensors
// quantization/quant_args.py: its defaults, field validators and
// validate_model_after).
type compressedWeightsJSON struct {
	NumBits   *int            `json:"num_bits"`
	Type      *string         `json:"type"`
	Symmetric *bool           `json:"symmetric"`
	Strategy  *string         `json:"strategy"`
	GroupSize *int            `json:"group_size"`
	Dynamic   json.RawMessage `json:"dynamic"`
	Actorder  json.RawMessage `json:"actorder"`
}

// resolve returns the arguments QuantizationArgs makes of w; field names
// the group ("config_groups.group_0") in errors.
func (w compressedWeightsJSON) resolve(field string) (compressedWeights, error) {
	out := compressedWeights{NumBits: 8, Type: "int", Symmetric: true, GroupSize: w.GroupSize}
	if w.NumBits != nil {
		out.NumBits = *w.NumBits
	}
	if w.Type != nil {
		out.Type = strings.ToLower(*w.Type)
	}
	if w.Symmetric != nil {
		out.Symmetric = *w.Symmetric
	}
	switch {
	case w.Strategy != nil:
		out.Strategy = strings.ToLower(*w.Strategy)
	case w.GroupSize != nil && *w.GroupSize > 0:
		out.Strategy = "group"
	case w.GroupSize != nil && *w.GroupSize == -1:
		out.Strategy = "channel"
	default:
		out.Strategy = "tensor"
	}
	switch d := strings.TrimSpace(string(w.Dynamic)); d {
	case "", "null", "false":
	case "true":
		out.Dynamic = true
	default: // "local" (DynamicType.LOCAL), or anything else
		return out, fmt.Errorf("quantization_config: %s.weights.dynamic %s is not supported (false: stored scales)", field, rawClip(w.Dynamic))
	}
	switch a := strings.TrimSpace(string(w.Actorder)); a {
	case "", "null", "false":
	case "true":
		g := "group"
		out.Actorder = &g
	default:
		var s string
		if json.Unmarshal(w.Actorder, &s) != nil {
			return out, fmt.Errorf("quantization_config: %s.weights.actorder %s: want null, false or one of \"group\", \"weight\"", field, rawClip(w.Actorder))
		}
		s = strings.ToLower(s)
		out.Actorder = &s
	}
	return out, nil
}

// rawClip is a JSON value for a message, clipped to 40 bytes.
func rawClip(r json.RawMessage) string {
	s := strings.TrimSpace(string(r))
	if len(s) > 40 {
		return fmt.Sprintf("%s... (a JSON %s of %d bytes)", s[:40], jsonerr.Kind(r), len(s))
	}
	return s
}

// compressedGroup is one entry of config_groups.
type compressedGroup struct {
	name    string
	targets matchSet
	w       compressedWeights
}

// Compressed is model.QuantScheme for compressed-tensors pack-quantized int4
// checkpoints (config.json's quantization_config with quant_method
// "compressed-tensors" and format "pack-quantized").
type Compressed struct {
	groups []compressedGroup
	ignore matchSet
	// matched holds group's answer per module name (string → matched),
	// safe for plans and loads that share the scheme across goroutines.
	matched sync.Map
}

// compressedConfig is the JSON of quantization_config.
type compressedConfig struct {
	QuantMethod  string `json:"quant_method"`
	Format       string `json:"format"`
	ConfigGroups map[string]struct {
		Targets           []string        `json:"targets"`
		Weights           json.RawMessage `json:"weights"` // compressedWeightsJSON, decoded per group to name it
		InputActivations  json.RawMessage `json:"input_activations"`
		OutputActivations json.RawMessage `json:"output_activations"`
		Format            string          `json:"format"`
	} `json:"config_groups"`
	Ignore         []string        `json:"ignore"`
	KVCacheScheme  json.RawMessage `json:"kv_cache_scheme"`
	SparsityConfig json.RawMessage `json:"sparsity_config"`
	// TransformConfig holds llm-compressor's online rotations (SpinQuant,
	// QuaRot): the weights are stored rotated and vLLM's
	// CompressedTensorsConfig applies the transforms at run time.
	TransformConfig json.RawMessage `json:"transform_config"`
}

func isNull(r json.RawMessage) bool {
	s := strings.TrimSpace(string(r))
	return s == "" || s == "null" || s == "{}"
}

// parseCompressed parses a quantization_config object with quant_method
// "compressed-tensors". It accepts only what hsdb can load exactly: format
// pack-quantized, weight-only (no input or output activations, no kv-cache
// scheme, no sparsity, no transforms), int weights of 4 bits with strategy group; every
// other value is an error naming the field and what is supported.
func parseCompressed(raw json.RawMessage) (*Compressed, error) {
	var c compressedConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("quantization_config (compressed-tensors): %w", jsonerr.Explain(err))
	}
	if c.QuantMethod != "compressed-tensors" {
		return nil, fmt.Errorf("quantization_config: quant_method %q, want \"compressed-tensors\"", c.QuantMethod)
	}
	if c.Format != "pack-quantized" {
		return nil, fmt.Errorf("quantization_config: format %q is not supported (compressed-tensors \"pack-quantized\" is)", c.Format)
	}
	if len(c.ConfigGroups) == 0 {
		return nil, fmt.Errorf("quantization_config: config_groups is empty (want one group with int4 weights)")
	}
	if !isNull(c.KVCacheScheme) {
		return nil, fmt.Errorf("quantization_config: kv_cache_scheme is not supported (want null)")
	}
	if !isNull(c.SparsityConfig) {
		return nil, fmt.Errorf("quantization_config: sparsity_config is not supported (want null or {})")
	}
	if !isNull(c.TransformConfig) {
		return nil, fmt.Errorf("quantization_config: transform_config is not supported (want null or {}): its rotations are stored in the weights and applied at run time, which hsdb does not do")
	}
	s := &Compressed{}
	names := make([]string, 0, len(c.ConfigGroups))
	for n := range c.ConfigGroups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := c.ConfigGroups[n]
		f := "config_groups." + n
		if g.Format != "" && g.Format != "pack-quantized" {
			return nil, fmt.Errorf("quantization_config: %s.format %q is not supported (pack-quantized is)", f, g.Format)
		}
		if !isNull(g.InputActivations) || !isNull(g.OutputActivations) {
			return nil, fmt.Errorf("quantization_config: %s quantizes activations (input_activations/output_activations); only weight-only W4A16 is supported", f)
		}
		if absent(g.Weights) {
			return nil, fmt.Errorf("quantization_config: %s.weights is missing", f)
		}
		if k := jsonerr.Kind(g.Weights); k != "object" {
			return nil, fmt.Errorf("quantization_config: %s.weights is a JSON %s, want an object (num_bits, type, symmetric, strategy, group_size)", f, k)
		}
		var wj compressedWeightsJSON
		if err := json.Unmarshal(g.Weights, &wj); err != nil {
			return nil, fmt.Errorf("quantization_config: %s.weights: %w", f, jsonerr.Explain(err))
		}
		w, err := wj.resolve(f)
		if err != nil {
			return nil, err
		}
		switch {
		case w.NumBits != 4:
			return nil, fmt.Errorf("quantization_config: %s.weights.num_bits %d is not supported (4 is)", f, w.NumBits)
		case w.Type != "int":
			return nil, fmt.Errorf("quantization_config: %s.weights.type %q is not supported (int is)", f, w.Type)
		case w.Strategy != "group":
			return nil, fmt.Errorf("quantization_config: %s.weights.strategy %q is not supported (group is)", f, w.Strategy)
		case w.GroupSize == nil || *w.GroupSize <= 0 || *w.GroupSize > tensor.MaxBlock:
			return nil, fmt.Errorf("quantization_config: %s.weights.group_size must be an integer from 1 to %d for strategy group", f, tensor.MaxBlock)
		case w.Dynamic:
			return nil, fmt.Errorf("quantization_config: %s.weights.dynamic true is not supported (stored scales are)", f)
		case w.Actorder != nil && *w.Actorder != "":
			return nil, fmt.Errorf("quantization_config: %s.weights.actorder %q is not supported (null is)", f, *w.Actorder)
		}
		if len(g.Targets) == 0 {
			return nil, fmt.Errorf("quantization_config: %s.targets is empty", f)
		}
		cg := compressedGroup{name: n, w: w}
		for _, t := range g.Targets {
			m, err := newMatcher(f+".targets", t)
			if err != nil {
				return nil, err
			}
			cg.targets.add(m)
		}
		s.groups = append(s.groups, cg)
	}
	for _, t := range c.Ignore {
		m, err := newMatcher("ignore", t)
		if err != nil {
			return nil, err
		}
		s.ignore.add(m)
	}
	if n := s.patterns(); n > maxPatterns {
		return nil, fmt.Errorf("quantization_config: %d \"re:\" patterns in targets and ignore, more than the %d hsdb matches (each is tried against every linear module); list exact module names instead", n, maxPatterns)
	}
	return s, nil
}

// patterns counts the "re:" entries of the targets and the ignore list.
func (c *Compressed) patterns() int {
	n := 0
	for _, g := range c.groups {
		for _, t := range g.targets.rest {
			if t.re != nil {
				n++
			}
		}
	}
	for _, m := range c.ignore.rest {
		if m.re != nil {
			n++
		}
	}
	return n
}

// String describes the scheme: "compressed-tensors pack-quantized int4
// symmetric, group 32 (W4A16)"; groups that differ are listed.
func (c *Compressed) String() string {
	var parts []string
	for _, g := range c.groups {
		p := g.w.describe() // type "int", parseCompressed's only one
		if !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	return "compressed-tensors pack-quantized " + strings.Join(parts, "; ") + " (W4A16)"
}

// Quantizes reports whether the config quantizes the linear weight name
// ("<module>.weight"), from the config alone.
func (c *Compressed) Quantizes(name string) bool {
	mod, ok := strings.CutSuffix(name, ".weight")
	if !ok {
		return false
	}
	g, _ := c.group(mod)
	return g != nil
}

// Stored returns the tensors holding weight name when the checkpoint stores
// it packed (weight_packed, weight_scale, weight_shape and, if present,
// weight_zero_point and weight_g_idx); nil when it is stored dense.
func (c *Compressed) Stored(src model.WeightSource, name string) []string {
	mod, ok := strings.CutSuffix(name, ".weight")
	if !ok {
		return nil
	}
	if _, _, ok := src.Meta(mod + ".weight_packed"); !ok {
		return nil
	}
	var out []string
	for _, s := range []string{"weight_packed", "weight_scale", "weight_shape", "weight_zero_point", "weight_g_idx"} {
		if _, _, ok := src.Meta(mod + "." + s); ok {
			out = append(out, mod+"."+s)
		}
	}
	return out
}

// Planned returns the bytes of linear weight name [out, in] when the config
// quantizes it: 0.5 byte per parameter packed into int32 words
// (out·ceil(in/8)·4), bf16 scales (out·ceil(in/group_size)·2) and the 8-byte
// weight_shape; (0, false) for a module stored dense.
func (c *Compressed) Planned(name string, out, in int) (int64, bool) {
	mod, ok := strings.CutSuffix(name, ".weight")
	if !ok {
		return 0, false
	}
	g, _ := c.group(mod)
	if g == nil {
		return 0, false
	}
	gs := *g.w.GroupSize
	return int64(out)*int64(tensor.CeilDiv(in, 8))*4 + int64(out)*int64(tensor.CeilDiv(in, gs))*2 + 8, true
}

// Layout returns int4's format, [1, group_size] of the config group that
// quantizes weight name ([0, 0] for a module stored dense) and its scale
// tensor, "<module>.weight_scale".
func (c *Compressed) Layout(name string) model.QuantLayout {
	mod, _ := strings.CutSuffix(name, ".weight")
	l := model.QuantLayout{Format: tensor.QuantInt4Group, Scale: mod + ".weight_scale"}
	if g, _ := c.group(mod); g != nil {
		l.Block = [2]int{1, *g.w.GroupSize}
	}
	return l
}

var _ model.QuantScheme = (*Compressed)(nil)
