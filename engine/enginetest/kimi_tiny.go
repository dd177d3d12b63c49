package enginetest

import (
	"os"
	"path/filepath"
	"testing"

	"hsdb/engine/tensor"
)

// KimiTinyDir builds a Kimi-style model directory from the repository's
// testdata directory (given relative to the calling test's package, e.g.
// "../testdata"): the tiny DeepSeek-V3 fixture's weights with
// embed_tokens and lm_head [101, hidden] padded with zero rows to
// [576, hidden], and testdata/tiktoken/kimi_tiny's config.json (that
// fixture's, vocab_size 576, model_type kimi_k2), tiktoken.model (the first
// 320 cl100k_base ranks) and tokenizer_config.json (Kimi's special layout:
// ids 320..575); no tokenizer.json. It fails t on any file it cannot copy.
func KimiTinyDir(t testing.TB, testdata string) string {
	t.Helper()
	const vocab = 576
	dir := CopyHF(t, filepath.Join(testdata, "hf", "deepseek_v3"), func(name string, x *tensor.Tensor) *tensor.Tensor {
		if name != "model.embed_tokens.weight" && name != "lm_head.weight" {
			return x
		}
		y := tensor.New(x.DType, vocab, x.Shape[1])
		copy(y.Data, x.Data)
		return y
	}, nil)
	for _, f := range []string{"config.json", "tiktoken.model", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(testdata, "tiktoken", "kimi_tiny", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
