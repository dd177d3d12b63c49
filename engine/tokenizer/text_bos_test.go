package tokenizer

import "testing"

// TestTextBOS: `input text`, capture's "text" rows and generate --prompt
// prepended BOS() to every tokenizer's ids, so Kimi's text began with
// [BOS] (id 320 in testdata/tiktoken/kimi_tiny's tokenizer_config.json),
// which Kimi's TikTokenTokenizer never adds: its encode returns tiktoken's
// ids and PreTrainedTokenizer's build_inputs_with_special_tokens adds
// nothing (tokenization_kimi.py), so vLLM serving Kimi never runs that
// row. By the references: run.c's encode(bos=1) starts with id 1 (tok512);
// DeepSeek-V3's tokenizer_config.json has add_bos_token true and
// bos_token <｜begin▁of▁sentence｜>, id 0; Qwen3's bos_token is null; Kimi
// and plain tiktoken add none.
func TestTextBOS(t *testing.T) {
	kimi, err := LoadKimi("../../testdata/tiktoken/kimi_tiny/tiktoken.model")
	if err != nil {
		t.Fatal(err)
	}
	if kimi.BOS() != 320 {
		t.Fatalf("kimi_tiny BOS() = %d, want 320 ([BOS])", kimi.BOS())
	}
	for _, c := range []struct {
		name string
		tok  Tokenizer
		want int32
	}{
		{"llama2c tok512", loadLlama2CTest(t), 1},
		{"deepseek_v3", loadHFTest(t, "deepseek_v3"), 0},
		{"qwen3", loadHFTest(t, "qwen3"), -1},
		{"kimi_tiny", kimi, -1},
	} {
		if got := TextBOS(c.tok); got != c.want {
			t.Errorf("%s: TextBOS = %d, want %d", c.name, got, c.want)
		}
	}
}
