package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsBounded: an error quoting a file's string of 1 MB (here a
// tokenizer.json's decoder type, which the tokenizer quotes whole) was
// printed whole by hsdb capture and hsdb generate (1 MB on stderr, and in
// --json's "error"); the command line now clips a message as the
// debugger does (client.ClipMessage: its start and its end around the
// count of bytes left out, 4096 bytes at most).
func TestErrorsBounded(t *testing.T) {
	dir := t.TempDir()
	src, err := filepath.Abs("../../testdata/hf/llama")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors"} {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	tok := `{"added_tokens": [], "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "post_processor": null, "model": {"type": "BPE", "vocab": {"h": 0, "i": 1}, "merges": []},
  "decoder": {"type": "` + strings.Repeat("D", 1<<20) + `"}}`
	if err := writeFile(filepath.Join(dir, "tokenizer.json"), tok); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "t.jsonl")
	if err := writeFile(data, `{"text": "hi"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"capture", "--model", dir, "--layers", "0", "--data", data, "--out", filepath.Join(t.TempDir(), "d")},
		{"capture", "--json", "--model", dir, "--layers", "0", "--data", data, "--out", filepath.Join(t.TempDir(), "d")},
		{"generate", "--model", dir, "--prompt", "hi"},
		{"generate", "--json", "--model", dir, "--prompt", "hi"},
	} {
		out, errs, code := runHsdb(t, args...)
		if code == 0 || len(out)+len(errs) > 4096+200 || !strings.Contains(out+errs, "decoder type") || !strings.Contains(out+errs, "bytes left out") {
			t.Errorf("%s: exit %d, %d bytes; want non-zero, at most 4296 bytes naming the decoder type, clipped\n%.300s\n%.300s", strings.Join(args, " "), code, len(out)+len(errs), out, errs)
		}
	}
}
