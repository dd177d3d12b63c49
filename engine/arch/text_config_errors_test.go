package arch_test

import (
	"strings"
	"testing"

	"hsdb/engine/model"
)

// TestTextConfigErrorsNamed: an error an architecture finds in a
// wrapper's text_config (Kimi-K2.5's layout) said "config.json
// (DeepseekV3ForCausalLM): hidden_size is null" as if of the top level;
// it names text_config now. A wrapper's architectures that is not a list
// loaded, where a flat config's was refused: refused alike.
func TestTextConfigErrorsNamed(t *testing.T) {
	inner := strings.Replace(v3Config, `"hidden_size":96`, `"hidden_size":null`, 1)
	if inner == v3Config {
		t.Fatal("v3Config has no hidden_size 96 to null")
	}
	wrap := func(archs, text string) string {
		return `{"architectures": ` + archs + `, "model_type": "kimi_k25", "text_config": ` + text + `, "vision_config": {}}`
	}
	for _, c := range []struct{ cfg, want string }{
		{wrap(`["KimiK25ForConditionalGeneration"]`, inner),
			"config.json text_config (DeepseekV3ForCausalLM): hidden_size is null; want an integer (left out, DeepseekV3Config's default 7168 applies)"},
		{wrap(`"KimiK25ForConditionalGeneration"`, v3Config),
			"config.json: architectures: got a JSON string, want an array of strings"},
		{`{"architectures": "LlamaForCausalLM", "model_type": "llama"}`,
			"config.json: architectures: got a JSON string, want an array of strings"},
	} {
		_, _, err := model.ParseConfig([]byte(c.cfg))
		if err == nil || err.Error() != c.want {
			t.Errorf("%.60s...:\n got %v\nwant %s", c.cfg, err, c.want)
		}
	}
	if _, _, err := model.ParseConfig([]byte(wrap(`["KimiK25ForConditionalGeneration"]`, v3Config))); err != nil {
		t.Errorf("the wrapper as it is: %v", err)
	}
}
