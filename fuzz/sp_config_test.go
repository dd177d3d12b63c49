package fuzz

import (
	"os"
	"path/filepath"
	"testing"

	"hsdb/engine/tokenizer"
)

// FuzzSentencePieceConfig: tokenizer_config.json beside a bare
// tokenizer.model (tokenizer.LoadSentencePieceDir, transformers'
// conventions), with config.json's model_type llama or no config.json
// (seeds: scripts/sp_flags_reference.py's cases and Llama-2's layout).
// Bad input is an ErrFormat or ErrUnsupported error, never a crash; a
// loaded tokenizer encodes only ids of its vocabulary and adds a BOS/EOS
// of it or none.
func FuzzSentencePieceConfig(f *testing.F) {
	for _, s := range []string{
		`{"tokenizer_class": "LlamaTokenizer"}`,
		`{"tokenizer_class": "LlamaTokenizer", "add_bos_token": true, "add_eos_token": true}`,
		`{"tokenizer_class": "LlamaTokenizer", "add_bos_token": null, "legacy": true}`,
		`{"add_eos_token": true, "bos_token": {"content": "<s>"}, "eos_token": null}`,
		`{"added_tokens_decoder": {"1": {"content": "<s>", "special": true}}, "additional_special_tokens": ["</s>"]}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	model, err := os.ReadFile("../engine/tokenizer/testdata/tok512.model")
	if err != nil {
		f.Fatal(err)
	}
	p := scratch(f, "tokenizer.model")
	dir := filepath.Dir(p)
	if err := os.WriteFile(p, model, 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cfg []byte, llama bool) {
		if len(cfg) > 1<<12 {
			return
		}
		put(t, filepath.Join(dir, "tokenizer_config.json"), cfg)
		if llama {
			put(t, filepath.Join(dir, "config.json"), []byte(`{"model_type": "llama"}`))
		} else if err := os.Remove(filepath.Join(dir, "config.json")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		tok, err := tokenizer.LoadSentencePieceDir(p)
		if err != nil {
			kindOK(t, err)
			return
		}
		checkTokenizer(t, tok)
		for _, id := range []int32{tokenizer.TextBOS(tok), tokenizer.TextEOS(tok)} {
			if id < -1 || int(id) >= tok.VocabSize() {
				t.Fatalf("text BOS/EOS %d outside the vocabulary of %d", id, tok.VocabSize())
			}
		}
	})
}
