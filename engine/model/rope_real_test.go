package model

import "testing"

// TestRoPERealConfigs: the RoPE of configs as shipped, under left18's
// `rope_scaling or rope_parameters` order. DeepSeek-V3's config.json has
// rope_theta 10000 and only a legacy rope_scaling (type yarn, factor 40,
// original_max_position_embeddings 4096, beta_fast 32, beta_slow 1,
// mscale 1.0, mscale_all_dim 1.0); the same model saved by transformers 5
// carries it as rope_parameters with rope_theta inside. Both read as that
// YaRN. A config with a non-empty rope_scaling {"rope_type": "default"}
// beside a yarn rope_parameters is plain RoPE, as transformers 5 builds
// it (rope_scaling or rope_parameters: the non-empty dict wins), with the
// top-level rope_theta (rope_parameters' own is not read).
func TestRoPERealConfigs(t *testing.T) {
	const yarn = `"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
		"beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0`
	want := RoPEConfig{Type: "yarn", Theta: 10000, Factor: 40, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMax: 4096,
		BetaFast: 32, BetaSlow: 1, MScale: 1, MScaleAllDim: 1, Truncate: true}
	for name, cfg := range map[string]string{
		"DeepSeek-V3 (rope_scaling)":  `{"rope_theta": 10000, "max_position_embeddings": 163840, "rope_scaling": {` + yarn + `}}`,
		"transformers 5 save":         `{"max_position_embeddings": 163840, "rope_parameters": {"rope_theta": 10000, ` + yarn + `}}`,
		"v5 save, rope_scaling null":  `{"max_position_embeddings": 163840, "rope_scaling": null, "rope_parameters": {"rope_theta": 10000, ` + yarn + `}}`,
		"both, the same yarn in each": `{"rope_theta": 10000, "rope_scaling": {` + yarn + `}, "rope_parameters": {"rope_theta": 10000, ` + yarn + `}}`,
	} {
		c, err := ParseRoPE(rawConfig(t, cfg), 163840, 10000)
		if err != nil || c != want {
			t.Errorf("%s: %+v, %v; want %+v", name, c, err, want)
		}
	}
	c, err := ParseRoPE(rawConfig(t, `{"rope_theta": 50000, "rope_scaling": {"rope_type": "default"},
		"rope_parameters": {"rope_theta": 10000, `+yarn+`}}`), 163840, 10000)
	want = RoPEConfig{Type: "default", Theta: 50000, Factor: 1, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMax: 163840,
		BetaFast: 32, BetaSlow: 1, Truncate: true}
	if err != nil || c != want {
		t.Errorf("rope_scaling default beside a yarn rope_parameters: %+v, %v; want %+v", c, err, want)
	}
}
