package fuzz

import (
	"os"
	"path/filepath"
	"testing"

	"hsdb/engine/tokenizer"
)

// checkSpecials: a loaded tokenizer's BOS, EOS and text BOS/EOS are ids of
// its vocabulary or -1 (none).
func checkSpecials(t *testing.T, tok tokenizer.Tokenizer) {
	t.Helper()
	for _, id := range []int32{tok.BOS(), tok.EOS(), tokenizer.TextBOS(tok), tokenizer.TextEOS(tok)} {
		if id < -1 || int(id) >= tok.VocabSize() {
			t.Fatalf("special id %d outside the vocabulary of %d", id, tok.VocabSize())
		}
	}
}

// FuzzKimiTokenizerConfig: the tokenizer_config.json beside a Kimi
// tiktoken.model (tokenizer.LoadKimi: added_tokens_decoder naming the
// special ids after the ranks, bos_token and eos_token as strings or
// AddedToken objects, tokenizer_class). The rank file is Kimi's tiny one
// (testdata/tiktoken/kimi_tiny, 320 ranks); seeds: its
// tokenizer_config.json (2.6 KB) and smaller hand-written ones; inputs
// over 4 KB are skipped. Bad input is ErrFormat or ErrUnsupported; a
// loaded tokenizer encodes within its vocabulary, special tokens included.
func FuzzKimiTokenizerConfig(f *testing.F) {
	seedFile(f, "../testdata/tiktoken/kimi_tiny/tokenizer_config.json")
	for _, s := range []string{
		`{"added_tokens_decoder": {"320": {"content": "[BOS]"}, "321": {"content": "[EOS]"}, "322": {"content": "<|im_end|>"}}, "bos_token": "[BOS]", "eos_token": {"content": "<|im_end|>"}}`,
		`{"tokenizer_class": "TikTokenTokenizer", "bos_token": null}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	ranks, err := os.ReadFile("../testdata/tiktoken/kimi_tiny/tiktoken.model")
	if err != nil {
		f.Fatal(err)
	}
	p := scratch(f, "tiktoken.model")
	put2(f, p, ranks)
	cfg := filepath.Join(filepath.Dir(p), "tokenizer_config.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<12 {
			return
		}
		put(t, cfg, b)
		tok, err := tokenizer.LoadKimi(p)
		if err != nil {
			kindOK(t, err)
			return
		}
		checkTokenizer(t, tok)
		checkSpecials(t, tok)
	})
}

// FuzzHFTokenizerConfig: the tokenizer_config.json beside an HF
// tokenizer.json (tokenizer.LoadHF: bos_token, eos_token, add_bos_token,
// add_eos_token, added_tokens_decoder), the tokenizer.json being the
// synthetic byte-level BPE of FuzzLoadHFTokenizer. Seeds: hand-written
// configs of the shapes Llama-3, Qwen3 and DeepSeek ship; inputs over 4 KB
// are skipped. Same contract as FuzzKimiTokenizerConfig.
func FuzzHFTokenizerConfig(f *testing.F) {
	for _, s := range []string{
		`{"bos_token": "<X>", "eos_token": {"content": "cat", "lstrip": false}, "add_bos_token": true}`,
		`{"bos_token": null, "eos_token": "<X>", "add_eos_token": true, "added_tokens_decoder": {"100": {"content": "<X>", "special": true}}}`,
		`{"add_bos_token": false, "add_eos_token": false, "tokenizer_class": "PreTrainedTokenizerFast"}`,
		`{"bos_token": {"__type": "AddedToken", "content": "<X>"}, "legacy": true}`,
	} {
		f.Add([]byte(s))
	}
	p := scratch(f, "tokenizer.json")
	put2(f, p, []byte(synthTokenizerJSON))
	cfg := filepath.Join(filepath.Dir(p), "tokenizer_config.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<12 {
			return
		}
		put(t, cfg, b)
		tok, err := tokenizer.LoadHF(p)
		if err != nil {
			kindOK(t, err)
			return
		}
		checkTokenizer(t, tok)
		checkSpecials(t, tok)
	})
}

// put2 writes b to path or fails the fuzz target.
func put2(f *testing.F, path string, b []byte) {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		f.Fatal(err)
	}
}
