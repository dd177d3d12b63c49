package repl

import "testing"

// TestInfoModelTokenizer: `info model` did not say which tokenizer
// `input text` encodes with (a model directory may hold several files
// it looks for, and a llama2.c checkpoint's tok*.bin beside it), so a
// wrong encoding could not be traced to its file. It names the
// tokenizer; by hand: the test model is testdata/stories260K's llama2.c
// checkpoint, beside which lie tok512.bin (llama2.c's format) and
// tok512.model (SentencePiece); a llama2.c checkpoint's tokenizer is the
// tok*.bin beside it: llama2c:tok512.bin.
func TestInfoModelTokenizer(t *testing.T) {
	f := newFake(t, 1)
	f.AssertExec("info model", "tokenizer", "llama2c:tok512.bin")
	res := f.jsonExec("info model")
	m, _ := res[0]["result"].(map[string]any)
	if m["tokenizer"] != "llama2c:tok512.bin" {
		t.Errorf("--json tokenizer %v", m["tokenizer"])
	}
}
