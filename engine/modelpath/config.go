package modelpath

import (
	"encoding/json"
	"fmt"
	"strings"

	"hsdb/engine/llama2c"
	"hsdb/engine/model"
	"hsdb/engine/regfile"
	"hsdb/engine/stories"
)

// ConfigDims returns a model's sizes from its config alone, without loading
// weights: path is an HF model directory or its config.json, a llama2.c
// .bin checkpoint, or "" (or Embedded) for the embedded
// stories260K. When hsdb knows the architecture, the sizes are its parsed
// Dims; otherwise (an architecture not supported yet) the common fields are
// read by their config.json names. Either way Named holds every integer
// field of the config (kv_lora_rank, q_lora_rank, moe_intermediate_size,
// ...; a nested text_config included) and the products shape forensics
// needs (num_attention_heads*head_dim, num_attention_heads*qk_head_dim,
// num_attention_heads*v_head_dim, kv_lora_rank+qk_rope_head_dim). Token ids
// (bos_token_id, ...) are left out. Errors name the file and the field.
func ConfigDims(path string) (*model.Dims, error) {
	data, where, err := ConfigJSON(path)
	if err != nil {
		return nil, err
	}
	return DimsFromConfigJSON(data, where)
}

// ConfigJSON returns the config.json bytes of the model at path (Resolve)
// and the name to quote in errors: the embedded model's config.json, an HF
// directory's config.json, or the config a llama2.c checkpoint's header
// implies (llama2c.Header.ConfigJSON; only its header is read, and the
// file's size checked against it, llama2c.ReadHeader). Errors name the path.
func ConfigJSON(path string) ([]byte, string, error) {
	p, err := Resolve(path)
	if err != nil {
		return nil, path, err
	}
	switch p.Kind {
	case KindEmbedded:
		b, err := stories.Files.ReadFile("model/config.json")
		return b, Embedded + "/config.json", err
	case KindLlama2C:
		h, err := llama2c.ReadHeader(p.File) // the header alone: the weights are the load's to read, once
		if err != nil {
			return nil, path, err
		}
		return h.ConfigJSON(), path, nil
	}
	b, err := regfile.ReadFile(p.File, MaxConfigBytes)
	if err != nil {
		return nil, p.File, fmt.Errorf("--model %s: %w (an HF model directory needs config.json)", path, err)
	}
	return b, p.File, nil
}

// MaxConfigBytes bounds config.json (Kimi-K2.5's, with its vision config,
// is under 10 KiB).
const MaxConfigBytes = 64 << 20

// DimsFromConfigJSON parses config.json bytes into Dims as ConfigDims
// describes; where names the file in errors.
func DimsFromConfigJSON(data []byte, where string) (*model.Dims, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", where, err)
	}
	if err := model.CheckBounds(raw, where); err != nil { // before any size is used, as model.ParseConfig does
		return nil, err
	}
	named := map[string]int{}
	collectInts(raw, named)
	if tc, ok := raw["text_config"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(tc, &inner) == nil {
			if err := model.CheckBounds(inner, where+": text_config"); err != nil {
				return nil, err
			}
			collectInts(inner, named)
		}
	}
	var d *model.Dims
	if cfg, _, err := model.ParseConfig(data); err == nil {
		d = cfg.Dims()
		cp := *d
		d = &cp
		for k, v := range d.Named {
			named[k] = v
		}
	} else {
		var head struct {
			Architectures []string `json:"architectures"`
			ModelType     string   `json:"model_type"`
		}
		_ = json.Unmarshal(data, &head)
		d = &model.Dims{ModelType: head.ModelType, Hidden: named["hidden_size"], Layers: named["num_hidden_layers"],
			Vocab: named["vocab_size"], Heads: named["num_attention_heads"], KVHeads: named["num_key_value_heads"],
			HeadDim: named["head_dim"], Intermediate: named["intermediate_size"], MaxPos: named["max_position_embeddings"]}
		if len(head.Architectures) > 0 {
			d.Arch = head.Architectures[0]
		}
		if d.Hidden <= 0 {
			return nil, fmt.Errorf("%s: no positive hidden_size", where)
		}
	}
	addProducts(named)
	d.Named = named
	return d, nil
}

// collectInts copies every integer-valued field of a config object, except
// token ids, into named.
func collectInts(raw map[string]json.RawMessage, named map[string]int) {
	for k, v := range raw {
		if strings.HasSuffix(k, "token_id") {
			continue
		}
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			continue
		}
		if i, err := n.Int64(); err == nil && i > 0 {
			named[k] = int(i)
		}
	}
}

// addProducts adds the derived widths a projection produces.
func addProducts(n map[string]int) {
	mul := func(name, a, b string) {
		if n[a] > 0 && n[b] > 0 {
			if _, ok := n[name]; !ok {
				n[name] = n[a] * n[b]
			}
		}
	}
	mul("num_attention_heads*head_dim", "num_attention_heads", "head_dim")
	mul("num_key_value_heads*head_dim", "num_key_value_heads", "head_dim")
	mul("num_attention_heads*qk_head_dim", "num_attention_heads", "qk_head_dim")
	mul("num_attention_heads*v_head_dim", "num_attention_heads", "v_head_dim")
	if n["qk_head_dim"] == 0 && n["qk_nope_head_dim"] > 0 && n["qk_rope_head_dim"] > 0 {
		n["num_attention_heads*(qk_nope_head_dim+qk_rope_head_dim)"] = n["num_attention_heads"] * (n["qk_nope_head_dim"] + n["qk_rope_head_dim"])
	}
	if n["kv_lora_rank"] > 0 && n["qk_rope_head_dim"] > 0 {
		n["kv_lora_rank+qk_rope_head_dim"] = n["kv_lora_rank"] + n["qk_rope_head_dim"]
	}
}
