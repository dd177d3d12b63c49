package repl

import (
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
)

// TestInputTextKimiBound: `input text` kept a position for BOS whenever
// the tokenizer had one, so on Kimi (whose tiktoken.model adds no [BOS]
// to a text, tokenizer.TextBOS) a text of exactly max_position_embeddings
// tokens was refused as "more than 64 tokens with BOS (... more than
// 63 ...)". By hand: kimi_tiny's tiktoken.model holds the 256 single bytes
// and 64 merges, none with a byte >= 0x80, so each 你 (e4 bd a0) is 3
// tokens and "!" one: 21 of them and "!" make 64 tokens, which fit
// max_position_embeddings 64; 22 (66 tokens) do not, and the refusal
// says nothing of BOS.
func TestInputTextKimiBound(t *testing.T) {
	f := openFake(t, enginetest.KimiTinyDir(t, "../testdata"), engine.Options{})
	tok, err := f.s.E.Tokenizer() // as hsdb's debugger sets it
	if err != nil {
		t.Fatal(err)
	}
	f.s.Tok = tok
	f.AssertExec(`input text "`+strings.Repeat("你", 21)+`!"`, "batch: 1 sequence, 64 tokens")
	f.buf.Reset()
	err = f.Term.Exec(`input text "` + strings.Repeat("你", 22) + `"`)
	if err == nil || !strings.Contains(err.Error(), "more than max_position_embeddings 64 tokens (") {
		t.Errorf("66 tokens: %v", err)
	}
}
