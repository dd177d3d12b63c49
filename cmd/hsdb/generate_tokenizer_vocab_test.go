package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/enginetest"
)

// TestGenerateUnfitTokenizerBeforeLoad: a tokenizer of more tokens than
// config.json's vocab_size (Qwen3's tokenizer.json, 151669 tokens, beside
// the llama fixture's config.json, vocab_size 101) is one the load refuses
// (engine.Tokenizer); generate --prompt said so only after the load, since
// its check before the load looked for a tokenizer without the vocab. The
// directory has no weights, so a load would fail first on them: the
// tokenizer's refusal, naming both sizes, must come before it.
func TestGenerateUnfitTokenizerBeforeLoad(t *testing.T) {
	dir := configOnlyDir(t, "llama")
	tok := enginetest.Gunzip(t, "../../engine/tokenizer/testdata/qwen3.tokenizer.json.gz")
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runHsdb(t, "generate", "--model", dir, "--prompt", "hi")
	want := "hsdb generate: --prompt needs a tokenizer: tokenizer "
	// exit 2: the prompt needs --ids here, as for no tokenizer at all
	// (TestGenerateTokenizerBeforeLoad).
	if code != 2 || !strings.HasPrefix(errs, want) || !strings.Contains(errs, "151669 tokens, more than the model's vocab_size 101") {
		t.Errorf("exit %d, stderr %q; want exit 2 and %q… naming 151669 tokens and vocab_size 101", code, errs, want)
	}
}
