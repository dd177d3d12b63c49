package engine

import (
	"testing"
)

// TestNoTokenizerMessage: `input text` on a model without a
// tokenizer said "no tokenizer for DIR: looked for ... in DIR (use token
// ids instead); give ids instead (input ids 1,2,3)": the directory twice
// and two hints. The engine now names the directory once and what it
// looked for; each caller adds its own hint (--ids, input ids).
func TestNoTokenizerMessage(t *testing.T) {
	const dir = "../testdata/hf/llama"
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Tokenizer()
	want := "no tokenizer in " + dir + " (looked for tokenizer.json, tiktoken.model, tokenizer.model, tokenizer.bin)"
	if err == nil || err.Error() != want {
		t.Fatalf("Tokenizer() = %v, want %q", err, want)
	}
}
