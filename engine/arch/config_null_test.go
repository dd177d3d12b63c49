package arch_test

import (
	"strings"
	"testing"

	"hsdb/engine/model"
)

// llamaSmall is a Llama-family config.json with every size given; the
// tests swap the architecture and drop or null one field.
const llamaSmall = `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":96,"intermediate_size":160,
"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":24,"vocab_size":101,"max_position_embeddings":64,
"rms_norm_eps":1e-06,"hidden_act":"silu","tie_word_embeddings":false}`

// withArch returns llamaSmall as architecture arch.
func withArch(arch string) string {
	return strings.Replace(llamaSmall, "LlamaForCausalLM", arch, 1)
}

// setField returns cfg with field's value replaced by v ("null"), or the
// field dropped when v is "".
func setField(t *testing.T, cfg, field, v string) string {
	t.Helper()
	i := strings.Index(cfg, `"`+field+`":`)
	if i < 0 {
		t.Fatalf("%s is not in the config", field)
	}
	j := i + len(field) + 3
	for j < len(cfg) && cfg[j] != ',' && cfg[j] != '}' {
		j++
	}
	if v != "" {
		return cfg[:i] + `"` + field + `":` + v + cfg[j:]
	}
	if cfg[j] == ',' {
		j++
	}
	return cfg[:i] + cfg[j:]
}

// TestNullFieldRefused: an explicit null where the HF config class gives
// None no meaning is refused naming the field, for every architecture
// alike: DeepSeek read it as the class default (hidden_size null planned
// as 7168) and Llama as 0 ("hidden_size must be positive, got 0", of a
// file with no 0 in it).
func TestNullFieldRefused(t *testing.T) {
	for _, c := range []struct{ cfg, field, want string }{
		{llamaSmall, "hidden_size", "config.json (LlamaForCausalLM): hidden_size is null; want an integer (left out, LlamaConfig's default 4096 applies)"},
		{llamaSmall, "vocab_size", "config.json (LlamaForCausalLM): vocab_size is null; want an integer (left out, LlamaConfig's default 32000 applies)"},
		{llamaSmall, "rms_norm_eps", "config.json (LlamaForCausalLM): rms_norm_eps is null; want a number (left out, LlamaConfig's default 1e-06 applies)"},
		{llamaSmall, "tie_word_embeddings", "config.json (LlamaForCausalLM): tie_word_embeddings is null; want true or false (left out, LlamaConfig's default false applies)"},
		{withArch("MistralForCausalLM"), "num_hidden_layers", "config.json (MistralForCausalLM): num_hidden_layers is null; want an integer (left out, MistralConfig's default 32 applies)"},
		{withArch("Qwen2ForCausalLM"), "intermediate_size", "config.json (Qwen2ForCausalLM): intermediate_size is null; want an integer (left out, Qwen2Config's default 22016 applies)"},
		{withArch("Qwen3ForCausalLM"), "head_dim", "config.json (Qwen3ForCausalLM): head_dim is null; want an integer (left out, Qwen3Config's default 128 applies)"},
		{v3Config, "hidden_size", "config.json (DeepseekV3ForCausalLM): hidden_size is null; want an integer (left out, DeepseekV3Config's default 7168 applies)"},
		{v3Config, "num_hidden_layers", "config.json (DeepseekV3ForCausalLM): num_hidden_layers is null; want an integer (left out, DeepseekV3Config's default 61 applies)"},
		{v3Config, "vocab_size", "config.json (DeepseekV3ForCausalLM): vocab_size is null; want an integer (left out, DeepseekV3Config's default 129280 applies)"},
		{v3Config, "kv_lora_rank", "config.json (DeepseekV3ForCausalLM): kv_lora_rank is null; want an integer (left out, DeepseekV3Config's default 512 applies)"},
		{v3Config, "scoring_func", `config.json (DeepseekV3ForCausalLM): scoring_func is null; want a string (left out, HF DeepseekV3MoE's default "sigmoid" applies)`},
		{v2Config, "hidden_size", "config.json (DeepseekV2ForCausalLM): hidden_size is null; want an integer (left out, DeepseekV2Config's default 4096 applies)"},
		{v2Config, "topk_method", `config.json (DeepseekV2ForCausalLM): topk_method is null; want a string (left out, DeepseekV2Config's default "greedy" applies)`},
	} {
		_, _, err := model.ParseConfig([]byte(setField(t, c.cfg, c.field, "null")))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s null: err = %v\nwant %q", c.field, err, c.want)
		}
	}
}

// TestNullWithMeaningAccepted: where the config class accepts None and
// hsdb follows its meaning, null still parses: no query LoRA, no shared
// experts, one group kept (topk_group), num_key_value_heads the attention
// heads, head_dim hidden_size / num_attention_heads.
func TestNullWithMeaningAccepted(t *testing.T) {
	for _, c := range []struct{ cfg, field string }{
		{v3Config, "q_lora_rank"}, {v3Config, "n_shared_experts"}, {v3Config, "topk_group"},
		{v3Config, "norm_topk_prob"}, {v3Config, "rope_interleave"}, {llamaSmall, "num_key_value_heads"}, {llamaSmall, "head_dim"},
	} {
		cfg, _, err := model.ParseConfig([]byte(setField(t, c.cfg, c.field, "null")))
		if err != nil {
			t.Errorf("%s null: %v", c.field, err)
			continue
		}
		named := cfg.Dims().Named
		switch c.field {
		case "q_lora_rank":
			if _, ok := named["q_lora_rank"]; ok {
				t.Errorf("q_lora_rank null: the model has a query LoRA of %d", named["q_lora_rank"])
			}
		case "n_shared_experts":
			if _, ok := named["moe_intermediate_size*n_shared_experts"]; ok {
				t.Errorf("n_shared_experts null: the model has shared experts")
			}
		case "num_key_value_heads":
			if d := cfg.Dims(); d.KVHeads != 4 {
				t.Errorf("num_key_value_heads null: %d kv heads, want num_attention_heads 4", d.KVHeads)
			}
		}
	}
}
