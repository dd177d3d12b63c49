package fuzz

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

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

// tinySentencePiece is a BPE SentencePiece ModelProto of 8 pieces
// (sentencepiece_model.proto: pieces = 1 {piece 1, score 2, type 3},
// trainer_spec = 2 {model_type 3 = BPE}, normalizer_spec = 3 {name 1,
// add_dummy_prefix 3}), written with protowire: 90 bytes, where
// stories260K's tok512.model (7.5 KB) made each minimization of the
// fuzzer take minutes.
func tinySentencePiece() []byte {
	piece := func(s string, score float32, typ uint64) []byte {
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, s)
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(score))
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		return protowire.AppendVarint(b, typ)
	}
	var m []byte
	for i, p := range []struct {
		s   string
		typ uint64
	}{{"<unk>", 2}, {"<s>", 3}, {"</s>", 3}, {"▁", 1}, {"a", 1}, {"b", 1}, {"▁a", 1}, {"ab", 1}} {
		m = protowire.AppendTag(m, 1, protowire.BytesType)
		m = protowire.AppendBytes(m, piece(p.s, -float32(i), p.typ))
	}
	var trainer []byte
	trainer = protowire.AppendTag(trainer, 3, protowire.VarintType)
	trainer = protowire.AppendVarint(trainer, 2)
	m = protowire.AppendTag(m, 2, protowire.BytesType)
	m = protowire.AppendBytes(m, trainer)
	var norm []byte
	norm = protowire.AppendTag(norm, 1, protowire.BytesType)
	norm = protowire.AppendString(norm, "identity")
	norm = protowire.AppendTag(norm, 3, protowire.VarintType)
	norm = protowire.AppendVarint(norm, 1)
	m = protowire.AppendTag(m, 3, protowire.BytesType)
	return protowire.AppendBytes(m, norm)
}

// FuzzLoadSentencePiece: SentencePiece .model protobufs (seed:
// tinySentencePiece).
func FuzzLoadSentencePiece(f *testing.F) {
	f.Add(tinySentencePiece())
	p := scratch(f, "tok.model")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<10 {
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

// FuzzTiktokenRanks: tiktoken rank files. A valid one lists all 256
// single bytes (tiktoken cannot encode a byte without one), so a whole
// file is 2-3 KB, and the fuzzer, which minimizes every new input by
// re-running it once per byte removed, spent minutes on each. Here the
// fuzzed bytes are parsed alone (any rank file) and appended to the 256
// byte lines of Kimi's tiny tiktoken.model (testdata/tiktoken/kimi_tiny):
// seed, its first 8 merge lines (ranks 256..263); inputs over 256 bytes
// are skipped (the minimization is quadratic in the input). The combined file
// must parse to a tokenizer that encodes within its vocabulary, or fail
// with ErrFormat naming the line.
func FuzzTiktokenRanks(f *testing.F) {
	b, err := os.ReadFile("../testdata/tiktoken/kimi_tiny/tiktoken.model")
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	base := []byte(strings.Join(lines[:256], ""))
	f.Add([]byte(strings.Join(lines[256:264], "")))
	f.Fuzz(func(t *testing.T, extra []byte) {
		if len(extra) > 256 {
			return
		}
		if _, _, err := tokenizer.ParseTiktokenRanks(extra); err != nil {
			kindOK(t, err)
		}
		file := append(append([]byte(nil), base...), extra...)
		ranks, _, err := tokenizer.ParseTiktokenRanks(file)
		if err != nil {
			kindOK(t, err)
			return
		}
		tok, err := tokenizer.NewTiktoken("fuzz", file, tokenizer.PatternKimi, nil, -1, -1)
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
	sp := t.TempDir() + "/tok.model"
	put(t, sp, tinySentencePiece())
	tok, err := tokenizer.LoadSentencePiece(sp)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := tok.Encode("ab a"); err != nil || len(ids) == 0 {
		t.Fatalf("tiny sentencepiece: %v %v", ids, err)
	}
	b, err := os.ReadFile("../testdata/tiktoken/kimi_tiny/tiktoken.model")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokenizer.NewTiktoken("fuzz", b, tokenizer.PatternKimi, nil, -1, -1); err != nil {
		t.Fatal(err)
	}
}
