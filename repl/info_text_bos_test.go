package repl

import (
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
)

// TestInfoModelTextBOS: whether `input text` puts BOS before a text
// differs by tokenizer (tokenizer.TextBOS), and `info model` named the
// tokenizer only, so a Kimi user could not see that a text gets no [BOS]
// until the ids were printed. By each reference: llama2.c's run.c
// prepends BOS 1 (stories260K); Kimi's TikTokenTokenizer adds none
// (kimi_tiny's tiktoken.model).
func TestInfoModelTextBOS(t *testing.T) {
	f := openFake(t, "", engine.Options{})
	f.AssertExec("info model", "text BOS           1 (`input text` puts it before a text")
	if got := f.jsonExec("info model")[0]["result"].(map[string]any)["text_bos"]; got != float64(1) {
		t.Errorf("stories260K json text_bos %v, want 1", got)
	}
	k := openFake(t, enginetest.KimiTinyDir(t, "../testdata"), engine.Options{})
	k.AssertExec("info model", "tokenizer          tiktoken:tiktoken.model\n", "text BOS           none (`input text` encodes a text alone")
	if got := k.jsonExec("info model")[0]["result"].(map[string]any)["text_bos"]; got != float64(-1) {
		t.Errorf("kimi json text_bos %v, want -1", got)
	}
}
