package arch_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"hsdb/engine/arch"
	"hsdb/engine/model"
	"hsdb/engine/quant"
)

// TestKimiConfigs: the Kimi-K2.5 wrapper's text_config and the flat
// Kimi-K2-Thinking config parse to the same DeepSeek-V3 model with Kimi's
// routing (n_group 1, topk_group 1, routed_scaling_factor 2.827, the values
// the fixture generator wrote) and the compressed-tensors scheme; a wrapper
// without text_config is one error naming the field.
func TestKimiConfigs(t *testing.T) {
	for _, name := range []string{"kimi_k2_thinking", "kimi_k25"} {
		data, err := os.ReadFile("../../testdata/hf/" + name + "/config.json")
		if err != nil {
			t.Fatal(err)
		}
		cfg, skipped, err := model.ParseConfig(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c, ok := cfg.(*arch.DeepseekConfig)
		if !ok {
			t.Fatalf("%s: config is %T", name, cfg)
		}
		if *c.NGroup != 1 || *c.TopkGroup != 1 || c.RoutedScalingFactor != 2.827 || *c.NRoutedExperts != 32 || *c.NumExpertsPerTok != 8 || !c.NormTopkProb {
			t.Errorf("%s: routing n_group %d topk_group %d scaling %v experts %d top-%d norm %v", name, *c.NGroup, *c.TopkGroup, c.RoutedScalingFactor, *c.NRoutedExperts, *c.NumExpertsPerTok, c.NormTopkProb)
		}
		if (name == "kimi_k25") != strings.Contains(skipped, "KimiK25ForConditionalGeneration") {
			t.Errorf("%s: skipped %q", name, skipped)
		}
		qs, err := quant.FromConfig(data)
		if err != nil || qs == nil || !strings.Contains(qs.String(), "compressed-tensors pack-quantized int4 symmetric, group 32") {
			t.Errorf("%s: scheme %v, %v", name, qs, err)
		}

		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatal(err)
		}
		if name == "kimi_k25" {
			delete(raw, "text_config")
			noText, _ := json.Marshal(raw)
			if _, _, err := model.ParseConfig(noText); err == nil || !strings.Contains(err.Error(), "has no text_config") {
				t.Errorf("wrapper without text_config: %v", err)
			}
		}
	}
}
