package arch_test

import (
	"strings"
	"testing"

	"hsdb/engine/model"
)

// TestUnknownArchitectureRefused: an architectures list naming only
// classes hsdb does not support is refused naming them, the supported
// ones and what to write; it loaded as model_type's architecture (exit 0),
// while vLLM refuses it. A list with a supported name, or no list, still
// picks as before.
func TestUnknownArchitectureRefused(t *testing.T) {
	const known = "DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM"
	for _, c := range []struct{ cfg, want string }{
		{withArch("FooForCausalLM"), `config.json: architectures ["FooForCausalLM"] names no architecture hsdb supports (it knows ` + known +
			`); model_type "llama" would mean LlamaForCausalLM, but the model class is chosen by architectures, as vLLM chooses it: if the checkpoint is a LlamaForCausalLM, write "architectures": ["LlamaForCausalLM"]`},
		{strings.Replace(v3Config, "DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM", 1), `config.json: architectures ["DeepseekV4ForCausalLM"] names no architecture hsdb supports (it knows ` + known +
			`); model_type "deepseek_v3" would mean DeepseekV3ForCausalLM, but the model class is chosen by architectures, as vLLM chooses it: if the checkpoint is a DeepseekV3ForCausalLM, write "architectures": ["DeepseekV3ForCausalLM"]`},
	} {
		_, _, err := model.ParseConfig([]byte(c.cfg))
		if err == nil || err.Error() != c.want {
			t.Errorf("err = %v\nwant %q", err, c.want)
		}
	}
	for cfg, arch := range map[string]string{
		strings.Replace(llamaSmall, `["LlamaForCausalLM"]`, `["FooForCausalLM", "MistralForCausalLM"]`, 1): "MistralForCausalLM",
		strings.Replace(llamaSmall, `"architectures":["LlamaForCausalLM"],`, ``, 1):                        "LlamaForCausalLM",
		strings.Replace(llamaSmall, `["LlamaForCausalLM"]`, `[]`, 1):                                       "LlamaForCausalLM",
	} {
		got, _, err := model.ParseConfig([]byte(cfg))
		if err != nil || got.Dims().Arch != arch {
			t.Errorf("%s: %v, want %s", cfg[:60], err, arch)
		}
	}
}
