package fuzz

import (
	"strings"
	"testing"

	"hsdb/engine/quant"
)

// FuzzQuantConfig: config.json bytes through quant.FromConfig, the
// quantization_config at the top level or in a multimodal wrapper's
// text_config (Kimi-K2.5) — fp8 block scales and compressed-tensors
// pack-quantized int4 with its config_groups, targets and ignore lists
// (re: patterns). Seeds: the released DeepSeek-V3 and Kimi-K2.5 configs
// (testdata/configs) and the fixtures' fp8, Kimi-K2.5 and Kimi-K2-Thinking
// configs, 1.5-3.5 KB; inputs over 8 KB are skipped. A scheme it accepts
// describes itself and answers Planned and Layout for the weight names
// of a DeepSeek-V3 layer without panicking, with bytes >= 0; an error has
// a message.
func FuzzQuantConfig(f *testing.F) {
	for _, p := range []string{"../testdata/configs/deepseek-v3/config.json", "../testdata/configs/kimi-k2.5/config.json",
		"../testdata/hf/deepseek_v3_fp8/config.json", "../testdata/hf/kimi_k25/config.json", "../testdata/hf/kimi_k2_thinking/config.json"} {
		seedFile(f, p)
	}
	names := []string{"model.layers.3.mlp.experts.7.down_proj.weight", "model.layers.0.self_attn.q_a_proj.weight",
		"model.layers.1.mlp.shared_experts.gate_proj.weight", "lm_head.weight", "model.layers.2.self_attn.kv_b_proj.weight"}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<13 {
			return
		}
		qs, err := quant.FromConfig(b)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if qs == nil {
			return
		}
		_ = qs.String()
		for _, n := range names {
			for _, sh := range [][2]int{{7168, 2048}, {1, 1}, {0, 0}, {33, 17}} {
				if bytes, _ := qs.Planned(n, sh[0], sh[1]); bytes < 0 {
					t.Fatalf("Planned(%s, %v) = %d bytes", n, sh, bytes)
				}
			}
			qs.Layout(n)
		}
	})
}
