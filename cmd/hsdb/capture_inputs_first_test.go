package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureInputsBeforeLoad: capture's --data and --ids are read and
// checked against config.json's vocab_size before the weights load, so a
// mistyped path, an id outside the vocabulary (the llama fixture's
// vocab_size is 101), a text row without a tokenizer or a bad --ids list is
// said at once (exit 2). The model directory has config.json and no
// weights: the load, which came first, failed on them instead (exit 1),
// after minutes on a large model.
func TestCaptureInputsBeforeLoad(t *testing.T) {
	dir := configOnlyDir(t, "llama")
	bad := filepath.Join(dir, "bad.jsonl")
	text := filepath.Join(dir, "text.jsonl")
	if err := os.WriteFile(bad, []byte(`{"input_ids": [1, 2, 101]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(text, []byte(`{"text": "hello"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"--data", filepath.Join(dir, "missing.jsonl")}, "hsdb capture: --data: open " + filepath.Join(dir, "missing.jsonl")},
		{[]string{"--data", bad}, "input_ids[2] = 101 is not a token id of the model (vocab_size 101)"},
		{[]string{"--data", text}, `a "text" row needs the model's tokenizer, and it has none: no tokenizer in ` + dir},
		{[]string{"--ids", "1,2;3,x"}, `--ids: sequence 1: token id "x" is not a non-negative integer`},
	} {
		args := append([]string{"capture", "--model", dir, "--layers", "0", "--out", out}, c.in...)
		_, errs, code := runHsdb(t, args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Contains(errs, "safetensors") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q, before the load", c.in, code, errs, c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused capture left %s: %v", out, err)
	}
}
