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

// TestInfoModelTextEOS: `input text` appends the tokenizer's text EOS
// (tokenizer.TextEOS) where its reference does, and `info model` showed
// only the BOS, so a user of an add_eos_token tokenizer could not see why
// every text row ends in </s>. By each reference: transformers' fast
// tokenizer with add_bos_token and add_eos_token true rebuilds its
// post_processor as "<s> $A </s>" (TokenizersBackend.update_post_processor),
// so BOS is <s> (id 3) and EOS </s> (id 4), as WriteEOSTokenizer
// numbers them; llama2.c's run.c encodes a prompt with eos=0 (stories260K:
// none); Kimi's TikTokenTokenizer appends nothing.
func TestInfoModelTextEOS(t *testing.T) {
	dir := enginetest.CopyHF(t, "../testdata/hf/llama", nil, nil)
	enginetest.WriteEOSTokenizer(t, dir)
	h := openFake(t, dir, engine.Options{})
	h.AssertExec("info model", "text BOS           3 (`input text` puts it before a text", "text EOS           4 (`input text` puts it after a text")
	res := h.jsonExec("info model")[0]["result"].(map[string]any)
	if res["text_bos"] != float64(3) || res["text_eos"] != float64(4) {
		t.Errorf("add_eos_token json text_bos %v, text_eos %v; want 3 and 4", res["text_bos"], res["text_eos"])
	}
	f := openFake(t, "", engine.Options{})
	f.AssertExec("info model", "text EOS           none (`input text` appends nothing")
	if got := f.jsonExec("info model")[0]["result"].(map[string]any)["text_eos"]; got != float64(-1) {
		t.Errorf("stories260K json text_eos %v, want -1", got)
	}
	k := openFake(t, enginetest.KimiTinyDir(t, "../testdata"), engine.Options{})
	if got := k.jsonExec("info model")[0]["result"].(map[string]any)["text_eos"]; got != float64(-1) {
		t.Errorf("kimi json text_eos %v, want -1", got)
	}
}
