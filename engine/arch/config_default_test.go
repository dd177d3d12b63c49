package arch_test

import (
	"errors"
	"slices"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// noter is how a caller (the plan, the loader) reads the defaults a
// config took, without importing engine/arch.
type noter interface{ Notes() []string }

// defaultsChecker is how a caller asks a config whether the checkpoint's
// tensors disagree with a default it took.
type defaultsChecker interface {
	CheckDefaults(t *model.Tree, src model.WeightSource) error
}

// TestAbsentFieldTakesClassDefault: a size left out takes the HF config
// class's default, for every architecture alike (Llama said "hidden_size
// must be positive, got 0"; Mistral, Qwen2 and Qwen3 took the attention
// heads for num_key_value_heads and Qwen3 hidden_size / heads for head_dim,
// where their classes say 8, 32 and 128), and the default is noted.
func TestAbsentFieldTakesClassDefault(t *testing.T) {
	for _, c := range []struct {
		cfg, field string
		got        func(d *model.Dims) int
		want       int
		note       string // "": none
	}{
		{llamaSmall, "hidden_size", func(d *model.Dims) int { return d.Hidden }, 4096, "hidden_size 4096 is LlamaConfig's default (config.json has none)"},
		{llamaSmall, "num_key_value_heads", func(d *model.Dims) int { return d.KVHeads }, 4, ""},
		{withArch("MistralForCausalLM"), "num_key_value_heads", func(d *model.Dims) int { return d.KVHeads }, 8, "num_key_value_heads 8 is MistralConfig's default (config.json has none)"},
		{withArch("Qwen2ForCausalLM"), "num_key_value_heads", func(d *model.Dims) int { return d.KVHeads }, 32, "num_key_value_heads 32 is Qwen2Config's default (config.json has none)"},
		{withArch("Qwen2ForCausalLM"), "head_dim", func(d *model.Dims) int { return d.HeadDim }, 24, ""},
		{withArch("Qwen3ForCausalLM"), "head_dim", func(d *model.Dims) int { return d.HeadDim }, 128, "head_dim 128 is Qwen3Config's default (config.json has none)"},
		{v3Config, "hidden_size", func(d *model.Dims) int { return d.Hidden }, 7168, "hidden_size 7168 is DeepseekV3Config's default (config.json has none)"},
		{v3Config, "kv_lora_rank", func(d *model.Dims) int { return d.Named["kv_lora_rank"] }, 512, "kv_lora_rank 512 is DeepseekV3Config's default (config.json has none)"},
		{v2Config, "vocab_size", func(d *model.Dims) int { return d.Vocab }, 32000, "vocab_size 32000 is DeepseekV2Config's default (config.json has none)"},
	} {
		cfg, _, err := model.ParseConfig([]byte(setField(t, c.cfg, c.field, "")))
		if err != nil {
			t.Errorf("%s absent: %v", c.field, err)
			continue
		}
		if got := c.got(cfg.Dims()); got != c.want {
			t.Errorf("%s %s absent: %d, want %d", cfg.Dims().Arch, c.field, got, c.want)
		}
		var want []string
		if c.note != "" {
			want = []string{c.note}
		}
		if got := cfg.(noter).Notes(); !slices.Equal(got, want) {
			t.Errorf("%s %s absent: notes %q, want %q", cfg.Dims().Arch, c.field, got, want)
		}
	}
	// A config that sets every size has no notes.
	for _, full := range []string{llamaSmall, v3Config} {
		cfg, _, err := model.ParseConfig([]byte(full))
		if err != nil {
			t.Fatal(err)
		}
		if n := cfg.(noter).Notes(); n != nil {
			t.Errorf("%s: notes %q, want none", cfg.Dims().Arch, n)
		}
	}
}

// TestAbsentWithoutDefaultIsMissing: DeepseekV2Config has no default for
// num_experts_per_tok (None), which routed experts need: left out, it is
// "missing", not a 0.
func TestAbsentWithoutDefaultIsMissing(t *testing.T) {
	_, _, err := model.ParseConfig([]byte(setField(t, v2Config, "num_experts_per_tok", "")))
	want := "config.json (DeepseekV2ForCausalLM): num_experts_per_tok is missing or null with n_routed_experts 8: the routing needs top-k"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %q", err, want)
	}
}

// TestDefaultNamedWhenWeightsDisagree: where a size took the class default
// and the checkpoint's tensor has another, CheckDefaults says the value
// came from the default (the loader said only "the config implies [56,
// 7168]" of a file with no 7168 in it); nil when the tensors agree or no
// default was taken.
func TestDefaultNamedWhenWeightsDisagree(t *testing.T) {
	const qa = "model.layers.0.self_attn.q_a_proj.weight"
	for _, c := range []struct {
		cfg, drop string // drop: the field left out
		tensors   map[string][]int
		want      string // "": nil
	}{
		{v3Config, "hidden_size", map[string][]int{qa: {56, 96}},
			"weight: hidden_size 7168 (DeepseekV3Config's default: config.json has none) but tensor model.layers.0.self_attn.q_a_proj.weight is [56, 96] in the checkpoint (the config implies [56, 7168])"},
		{v3Config, "hidden_size", map[string][]int{"model.embed_tokens.weight": {101, 96}, qa: {56, 96}},
			"weight: hidden_size 7168 (DeepseekV3Config's default: config.json has none) but tensor model.embed_tokens.weight is [101, 96] in the checkpoint (the config implies [101, 7168])"},
		{llamaSmall, "vocab_size", map[string][]int{"model.embed_tokens.weight": {101, 96}},
			"weight: vocab_size 32000 (LlamaConfig's default: config.json has none) but tensor model.embed_tokens.weight is [101, 96] in the checkpoint (the config implies [32000, 96])"},
		{llamaSmall, "vocab_size", map[string][]int{"model.embed_tokens.weight": {32000, 96}}, ""},
		// No default taken: the mismatch is the loader's to report.
		{llamaSmall, "", map[string][]int{"model.embed_tokens.weight": {7, 96}}, ""},
	} {
		text := c.cfg
		if c.drop != "" {
			text = setField(t, text, c.drop, "")
		}
		cfg, _, err := model.ParseConfig([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		src := &model.MapSource{Name: "test", Tensors: map[string]*tensor.Tensor{}}
		for n, s := range c.tensors {
			src.Tensors[n] = tensor.New(tensor.F32, s...)
		}
		err = cfg.(defaultsChecker).CheckDefaults(cfg.Tree(1), src)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s without %q: %v, want nil", cfg.Dims().Arch, c.drop, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, model.ErrWeight)):
			t.Errorf("%s without %q: err = %v\nwant %q", cfg.Dims().Arch, c.drop, err, c.want)
		}
	}
}

// TestDefaultsWithinBounds: the bound on layers × (experts + 1) holds for
// the config with its class's defaults, not only for the fields the file
// writes: {"model_type": "deepseek_v3", "num_hidden_layers": 4096} takes
// DeepseekV3Config's 256 experts, 4096 × 257 = 1052672 expert slots over
// the 131072 bound (131072 / 257 = 510 layers at most); it built that
// module tree (2 GB, 7 s) before this check. 16384 experts written out
// with the default 61 layers: 61 × 16385 is over it too (at most 7 layers).
func TestDefaultsWithinBounds(t *testing.T) {
	for _, c := range []struct{ cfg, want string }{
		{`{"model_type": "deepseek_v3", "num_hidden_layers": 4096}`,
			"config.json (DeepseekV3ForCausalLM): with DeepseekV3Config's defaults for the fields it leaves out: num_hidden_layers 4096 is out of range (want num_hidden_layers × (routed experts + 1) at most 131072; with 256 experts that is at most 510 layers)"},
		{`{"model_type": "deepseek_v3", "n_routed_experts": 16384}`,
			"config.json (DeepseekV3ForCausalLM): with DeepseekV3Config's defaults for the fields it leaves out: num_hidden_layers 61 is out of range (want num_hidden_layers × (routed experts + 1) at most 131072; with 16384 experts that is at most 7 layers)"},
	} {
		_, _, err := model.ParseConfig([]byte(c.cfg))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.cfg, err, c.want)
		}
	}
}
