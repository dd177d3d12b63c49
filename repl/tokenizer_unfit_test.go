package repl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	hsdbg "hsdb/inspect/debug"
)

// TestInputTextUnfitTokenizer: a model directory whose tokenizer.json has
// more tokens than the model's vocab_size (the Qwen3 tokenizer, 151669
// tokens, beside the 101-token llama fixture) has a tokenizer, just not a
// usable one: `input text` says that, naming the tokenizer and both sizes,
// instead of "this model has no tokenizer: tokenizer ... has" (a tokenizer
// absent or unfit: "no usable tokenizer").
func TestInputTextUnfitTokenizer(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join("../testdata/hf/llama", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), string(b))
	}
	tok := enginetest.Gunzip(t, "../engine/tokenizer/testdata/qwen3.tokenizer.json.gz")
	writeFile(t, filepath.Join(dir, "tokenizer.json"), string(tok))
	e, err := engine.Open(dir, engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := hsdbg.New(e)
	if tk, err := e.Tokenizer(); err != nil {
		s.TokErr = err // as cmd/hsdb sets it
	} else {
		s.Tok = tk
	}
	f := newFakeOn(t, s, &bytes.Buffer{})
	t.Cleanup(f.Close)
	err = f.Term.Exec(`input text "hi"`)
	if err == nil || !strings.Contains(err.Error(), "151669 tokens, more than the model's vocab_size 101") || !strings.Contains(err.Error(), "has no usable tokenizer") {
		t.Fatalf("input text: %v; want the tokenizer called unusable with both sizes, not absent", err)
	}
}
