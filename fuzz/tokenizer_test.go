package fuzz

import (
	"errors"
	"os"
	"testing"
	"unicode/utf8"

	"hsdb/engine/tokenizer"
)

// checkTokenizer encodes and decodes a few texts with a loaded tokenizer:
// ids in [0, VocabSize), a decode of any id in range never panics.
func checkTokenizer(t *testing.T, tok tokenizer.Tokenizer) {
	for _, s := range []string{"Once upon a time", " a b\tc\n", "héllo 世界", "<|im_end|>", ""} {
		ids, err := tok.Encode(s)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("Encode(%q) gave id %d outside [0, %d)", s, id, tok.VocabSize())
			}
		}
		if out := tok.Decode(ids); !utf8.ValidString(out) && utf8.ValidString(s) && len(ids) == 0 {
			t.Fatalf("Decode of nothing gave %q", out)
		}
	}
	for _, id := range []int32{0, 1, int32(tok.VocabSize() - 1)} {
		if id >= 0 && int(id) < tok.VocabSize() {
			tok.Decode([]int32{id})
		}
	}
}

// kindOK: a tokenizer load error must be one of the package's kinds.
func kindOK(t *testing.T, err error) {
	if !errors.Is(err, tokenizer.ErrFormat) && !errors.Is(err, tokenizer.ErrUnsupported) {
		t.Fatalf("error of no kind: %v", err)
	}
}

// FuzzLoadLlama2CTokenizer: llama2.c tokenizer files (seed:
// testdata/stories260K/tok512.bin, 6 KB).
func FuzzLoadLlama2CTokenizer(f *testing.F) {
	seedFile(f, "../testdata/stories260K/tok512.bin")
	p := scratch(f, "tok.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<14 {
			return
		}
		put(t, p, b)
		tok, err := tokenizer.LoadLlama2C(p)
		if err != nil {
			kindOK(t, err)
			return
		}
		checkTokenizer(t, tok)
	})
}

// FuzzLoadSentencePiece: SentencePiece .model protobufs (seed:
// testdata/stories260K/tok512.model, 7 KB).
func FuzzLoadSentencePiece(f *testing.F) {
	seedFile(f, "../testdata/stories260K/tok512.model")
	p := scratch(f, "tok.model")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<14 {
			return
		}
		put(t, p, b)
		tok, err := tokenizer.LoadSentencePiece(p)
		if err != nil {
			kindOK(t, err)
			return
		}
		checkTokenizer(t, tok)
	})
}

// synthTokenizerJSON is a small byte-level BPE tokenizer.json (the shape of
// engine/tokenizer's synthHF test fixture: added tokens, a Split +
// ByteLevel pre-tokenizer, merges in both spellings, byte fallback).
const synthTokenizerJSON = `{
  "added_tokens": [
    {"id": 100, "content": "<X>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true},
    {"id": 102, "content": "cat", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false}
  ],
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\s+|\\w+"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": true, "ignore_merges": false,
    "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "bc": 5, "abc": 6, "Ġa": 7, "<0x71>": 8},
    "merges": [["b", "c"], "a b", ["Ġ", "a"], ["a", "bc"]]},
  "decoder": {"type": "ByteLevel"}
}`

// FuzzLoadHFTokenizer: HF tokenizer.json files (seed: a 1 KB byte-level
// BPE one; the real Qwen3 and DeepSeek files are megabytes, too large to
// minimize over).
func FuzzLoadHFTokenizer(f *testing.F) {
	f.Add([]byte(synthTokenizerJSON))
	p := scratch(f, "tokenizer.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<13 {
			return
		}
		put(t, p, b)
		tok, err := tokenizer.LoadHF(p)
		if err != nil {
			kindOK(t, err)
			return
		}
		checkTokenizer(t, tok)
	})
}

// FuzzTiktokenRanks: tiktoken rank files (seed: Kimi's tiny
// tiktoken.model from testdata/tiktoken/kimi_tiny, 3 KB).
func FuzzTiktokenRanks(f *testing.F) {
	seedFile(f, "../testdata/tiktoken/kimi_tiny/tiktoken.model")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<13 {
			return
		}
		ranks, _, err := tokenizer.ParseTiktokenRanks(b)
		if err != nil {
			kindOK(t, err)
			return
		}
		tok, err := tokenizer.NewTiktoken("fuzz", b, tokenizer.PatternKimi, nil, -1, -1)
		if err != nil {
			kindOK(t, err)
			return
		}
		if tok.VocabSize() < len(ranks) {
			t.Fatalf("vocab %d below %d ranks", tok.VocabSize(), len(ranks))
		}
		checkTokenizer(t, tok)
	})
}

// TestTokenizerSeedsLoad: the seeds the fuzzers start from load (so the
// fuzzers explore from valid files, not only from errors).
func TestTokenizerSeedsLoad(t *testing.T) {
	p := t.TempDir() + "/tokenizer.json"
	put(t, p, []byte(synthTokenizerJSON))
	if _, err := tokenizer.LoadHF(p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../testdata/tiktoken/kimi_tiny/tiktoken.model")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokenizer.NewTiktoken("fuzz", b, tokenizer.PatternKimi, nil, -1, -1); err != nil {
		t.Fatal(err)
	}
}
