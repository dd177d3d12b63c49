package main

import (
	"strings"
	"testing"
)

// TestCheckModelNotRunSaysWhy: a --model that cannot run (8 heads over
// --tp 3) leaves layer matching skipped; the report's line said "no
// --model loaded", as if none had been named. It now names the model's
// error (stderr says the shapes are checked against config.json alone).
func TestCheckModelNotRunSaysWhy(t *testing.T) {
	out, errs, code := runHsdb(t, "check", "../../testdata/captures/good.safetensors", "--model", "../../testdata/hf/llama", "--tp", "3")
	want := "skip  matches model     --model could not run (../../testdata/hf/llama: num_attention_heads 8 is not divisible by --tp 3)"
	if !strings.Contains(out, want) || strings.Contains(out, "no --model loaded") {
		t.Errorf("exit %d, stdout:\n%s\nwant the line %q", code, out, want)
	}
	if !strings.Contains(errs, "cannot run the model") {
		t.Errorf("stderr %q: want the note that the model cannot run", errs)
	}
}
