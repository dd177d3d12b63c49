package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenizerLoneSurrogate: tokenizer.json, its tokenizer_config.json
// and Kimi's tokenizer_config.json with a lone UTF-16 surrogate escape in
// a token are refused naming the escape, as HF tokenizers' serde_json
// refuses them; encoding/json decoded "\ud800" to U+FFFD, so the token
// "<\ud800>" loaded as "<\ufffd>" and matched text the model never saw as
// that token.
func TestTokenizerLoneSurrogate(t *testing.T) {
	_, err := LoadHF(writeSynthHF(t, `"content": "<Y>"`, `"content": "<\ud800>"`))
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `lone surrogate \ud800`) {
		t.Errorf("tokenizer.json: %v; want ErrFormat naming the lone surrogate", err)
	}
	p := writeSynthHF(t)
	if err := os.WriteFile(filepath.Join(filepath.Dir(p), "tokenizer_config.json"), []byte(`{"bos_token": "<\udfff>"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHF(p); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `lone surrogate \udfff`) || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Errorf("tokenizer_config.json: %v; want ErrFormat naming the file and the lone surrogate", err)
	}
	_, err = LoadKimi(kimiDir(t, byteRanks(), `{"added_tokens_decoder": {"256": {"content": "[BOS]"}, "257": {"content": "[EOS]"}, "258": {"content": "<|\ud800|>"}}}`))
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `lone surrogate \ud800`) {
		t.Errorf("Kimi tokenizer_config.json: %v; want ErrFormat naming the lone surrogate", err)
	}
	// A pair is one character: the token loads as "<😀>".
	tk, err := LoadHF(writeSynthHF(t, `"content": "<Y>"`, `"content": "<\ud83d\ude00>"`))
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := tk.TokenID("<😀>"); !ok || id != 101 {
		t.Errorf("TokenID(<😀>) = %d, %v; want 101", id, ok)
	}
}
