package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsBounded: an error quoting a file's string of 1 MB (here a
// tokenizer.json's decoder type) was printed whole by hsdb capture and
// hsdb generate (1 MB on stderr, and in --json's "error"). The tokenizer
// now quotes such a string clipped at its source (its first 64 bytes and
// its size), so the whole error stays under 1 KiB; and the command line
// clips any message as the debugger does (client.ClipMessage: its start
// and its end around the count of bytes left out, 4096 bytes at most),
// shown here with a 1 MB argument the error quotes back.
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
		if code == 0 || len(out)+len(errs) > 1024 || !strings.Contains(out+errs, "decoder type") || !strings.Contains(out+errs, "(1048576 bytes)") {
			t.Errorf("%s: exit %d, %d bytes; want non-zero, under 1 KiB, naming the decoder type and its size\n%.300s\n%.300s", strings.Join(args, " "), code, len(out)+len(errs), out, errs)
		}
	}
	huge := strings.Repeat("x", 1<<20)
	for _, args := range [][]string{
		{"capture", "--model", dir, "--layers", huge, "--data", data, "--out", filepath.Join(t.TempDir(), "d")},
		{"capture", "--json", "--model", dir, "--layers", huge, "--data", data, "--out", filepath.Join(t.TempDir(), "d")},
		{"generate", "--model", dir, "--ids", "1," + huge},
		{"generate", "--json", "--model", dir, "--ids", "1," + huge},
	} {
		out, errs, code := runHsdb(t, args...)
		if code == 0 || len(out)+len(errs) > 4096+200 || !strings.Contains(out+errs, "bytes left out") {
			t.Errorf("%.100s: exit %d, %d bytes; want non-zero, at most 4296 bytes, clipped\n%.300s\n%.300s", strings.Join(args, " "), code, len(out)+len(errs), out, errs)
		}
	}
}
