package fuzz

import (
	"errors"
	"strings"
	"testing"

	"hsdb/engine/model"
)

// FuzzParseConfig: config.json bytes (seeds: every fixture's config.json
// under testdata/hf, Kimi-K2.5's text_config wrapper included, 1-3 KB) through model.ParseConfig and, when it
// parses, Dims and Validate at tp 1 and 8. An error must name what it
// refuses; the sizes it accepts must be positive.
func FuzzParseConfig(f *testing.F) {
	for _, m := range []string{"llama", "llama3", "mistral", "qwen2", "qwen3", "deepseek_v2", "deepseek_v3", "deepseek_v3_fp8"} {
		seedFile(f, "../testdata/hf/"+m+"/config.json")
	}
	seedFile(f, "../testdata/tiktoken/kimi_tiny/config.json")
	// Kimi-K2.5's multimodal wrapper (text_config, compressed-tensors
	// quantization_config) and Kimi-K2-Thinking's.
	seedFile(f, "../testdata/hf/kimi_k25/config.json")
	seedFile(f, "../testdata/hf/kimi_k2_thinking/config.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<14 {
			return
		}
		cfg, _, err := model.ParseConfig(b)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		d := cfg.Dims()
		if d == nil {
			t.Fatal("a parsed config without dims")
		}
		for _, w := range []int{1, 8} {
			if err := cfg.Validate(w); err != nil && errors.Unwrap(err) == nil && err.Error() == "" {
				t.Fatal("an empty validation error")
			}
		}
	})
}
