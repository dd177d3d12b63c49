package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKimiRankFileCutShort: a Kimi directory whose tiktoken.model ends at a
// line end before its last ranks (a partial download) and has no
// tokenizer_config.json loaded without a word: kimi_tiny's first 300
// lines are ranks 0..299, gapless, so the tokenizer put [BOS] at 300 and
// [EOS] at 301, ids the model's vocabulary of 576 (320 ranks and 256
// specials, config.json's bos_token_id 320) gives to merged tokens, and
// `input text "hello world[EOS]"` ran [..., 301]. Now the tokenizer is
// refused, naming the file, its 300 ranks, its 556 ids and vocab_size 576.
func TestKimiRankFileCutShort(t *testing.T) {
	dir := kimiTinyDir(t)
	p := filepath.Join(dir, "tiktoken.model")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) < 320 {
		t.Fatalf("kimi_tiny's tiktoken.model has %d lines, want 320", len(lines))
	}
	if err := os.WriteFile(p, bytes.Join(lines[:300], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "tokenizer_config.json")); err != nil {
		t.Fatal(err)
	}
	tok, err := FindTokenizer(dir, 576)
	for _, want := range []string{"tiktoken.model", "300 ranks", "ids 300..555", "vocab_size is 576"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("FindTokenizer: %v, %v; want an error with %q", tok, err, want)
		}
	}
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if tok, err := e.Tokenizer(); err == nil || !strings.Contains(err.Error(), "300 ranks") {
		t.Fatalf("Engine.Tokenizer: %v, %v; want the error naming 300 ranks", tok, err)
	}
	// The whole file still loads: 320 ranks and 256 specials are 576.
	dir = kimiTinyDir(t)
	if tok, err := FindTokenizer(dir, 576); err != nil || tok.VocabSize() != 576 {
		t.Fatalf("the whole kimi_tiny: %v, %v; want 576 ids", tok, err)
	}
}
