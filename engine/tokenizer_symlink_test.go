package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenizerDanglingSymlinkNamed: a tokenizer.json that is a symbolic
// link to a missing file (an HF hub snapshot whose blob was never
// downloaded) is the model's tokenizer and must be reported as broken,
// naming it and its target; it was skipped as absent, so hsdb silently
// used the next file it looks for (here a llama2.c tokenizer.bin) or said
// there was no tokenizer.json at all.
func TestTokenizerDanglingSymlinkNamed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "blobs", "0123abcd")
	if err := os.Symlink(target, filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Skip("symlink:", err)
	}
	tok, err := os.ReadFile(filepath.Join("..", "testdata", "stories260K", "tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.bin"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := findTokenizer(dir)
	if err == nil {
		t.Fatalf("findTokenizer loaded %s past a dangling tokenizer.json", got.Name())
	}
	for _, want := range []string{"tokenizer.json", "symbolic link", target} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
