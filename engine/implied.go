package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/safetensors"
)

// explainLimit adds to a config.json bound violation (*model.LimitError)
// what the checkpoint's tensor headers imply for the field: the layer count
// for num_hidden_layers, heads × head_dim for num_attention_heads and
// num_key_value_heads, the embedding's shape for hidden_size and
// vocab_size, the first MLP's rows for intermediate_size. Any other error,
// or a source that cannot list its tensors, is returned unchanged.
func explainLimit(err error, src model.WeightSource, cfgJSON []byte) error {
	var le *model.LimitError
	if src == nil || !errors.As(err, &le) || le.Implied != "" {
		return err
	}
	lister, ok := src.(interface{ Names() []string })
	if !ok {
		return err
	}
	le.Implied = impliedBy(le.Field, lister.Names(), src, cfgJSON) // the error was made by this parse: filled in place
	return err
}

// explainDirLimit is explainLimit for a model directory: it opens the
// directory's safetensors headers only when err is a bound violation.
func explainDirLimit(err error, dir string, cfgJSON []byte) error {
	var le *model.LimitError
	if !errors.As(err, &le) {
		return err
	}
	set, oerr := safetensors.OpenDir(dir)
	if oerr != nil {
		return err
	}
	defer set.Close()
	return explainLimit(err, stSource{set}, cfgJSON)
}

// impliedBy says what the checkpoint's tensors imply for field, or "".
func impliedBy(field string, names []string, src model.WeightSource, cfgJSON []byte) string {
	find := func(suffixes ...string) (string, []int) {
		for _, suf := range suffixes {
			for _, n := range names {
				if strings.HasSuffix(n, suf) {
					if _, shape, ok := src.Meta(n); ok && len(shape) == 2 {
						return n, shape
					}
				}
			}
		}
		return "", nil
	}
	switch field {
	case "num_hidden_layers":
		count, hi := model.CheckpointLayers(names)
		if hi < 0 {
			return "the checkpoint holds no decoder layers (no layers.N. tensors)"
		}
		return fmt.Sprintf("the checkpoint holds %d decoder layers (layers 0-%d)", count, hi)
	case "num_attention_heads", "num_key_value_heads":
		proj := []string{"layers.0.self_attn.q_proj.weight", "layers.0.self_attn.q_b_proj.weight"}
		if field == "num_key_value_heads" {
			proj = []string{"layers.0.self_attn.k_proj.weight"}
		}
		n, shape := find(proj...)
		if n == "" {
			return ""
		}
		hd := headDim(cfgJSON)
		if hd > 0 && shape[0]%hd == 0 {
			return fmt.Sprintf("the weights imply %s %d (%s has %d rows = %s × head_dim %d)", field, shape[0]/hd, n, shape[0], field, hd)
		}
		return fmt.Sprintf("the weights imply %s × head_dim = %d (%s has %d rows)", field, shape[0], n, shape[0])
	case "hidden_size", "vocab_size":
		n, shape := find("embed_tokens.weight")
		if n == "" {
			return ""
		}
		v := shape[1]
		if field == "vocab_size" {
			v = shape[0]
		}
		return fmt.Sprintf("the weights imply %s %d (%s is [%d, %d])", field, v, n, shape[0], shape[1])
	case "intermediate_size":
		n, shape := find("layers.0.mlp.gate_proj.weight")
		if n == "" {
			return ""
		}
		return fmt.Sprintf("the weights imply intermediate_size %d (%s has %d rows)", shape[0], n, shape[0])
	}
	return ""
}

// headDim returns the per-head query width config.json gives (head_dim, or
// qk_nope_head_dim + qk_rope_head_dim for MLA; in text_config for a
// wrapper), 0 when it gives none or an unusable value.
func headDim(cfgJSON []byte) int {
	type dims struct {
		HeadDim *int `json:"head_dim"`
		Nope    *int `json:"qk_nope_head_dim"`
		Rope    *int `json:"qk_rope_head_dim"`
	}
	var c struct {
		dims
		Text *dims `json:"text_config"`
	}
	if json.Unmarshal(cfgJSON, &c) != nil {
		return 0
	}
	d := c.dims
	if c.Text != nil {
		d = *c.Text
	}
	bounded := func(p *int) int {
		if p == nil || *p <= 0 || *p > 1<<12 {
			return 0
		}
		return *p
	}
	if hd := bounded(d.HeadDim); hd > 0 {
		return hd
	}
	if n, r := bounded(d.Nope), bounded(d.Rope); n > 0 && r > 0 {
		return n + r
	}
	return 0
}
