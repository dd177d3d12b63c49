package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestErrorsQuoteFileStringsBounded: a tokenizer file whose bad token,
// merge, type name or line is 1 MB long is refused with an error of
// under 1 KiB that still names the file and the field; before, each such
// error quoted the string whole (a 1 MB error, clipped only by the CLI and
// REPL). Every loader and each error that quotes a string from the file
// is exercised.
func TestErrorsQuoteFileStringsBounded(t *testing.T) {
	const maxErr = 1 << 10
	big := strings.Repeat("x", 1<<20)
	check := func(name, path, field string, err error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: loaded, want an error naming %s", name, field)
		case len(err.Error()) >= maxErr:
			t.Errorf("%s: an error of %d bytes, want under %d: %.200s...", name, len(err.Error()), maxErr, err)
		case !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), field):
			t.Errorf("%s: %v; want it to name %s and %s", name, err, path, field)
		}
	}

	// tokenizer.json and tokenizer_config.json, one field made bad each.
	hfCases := []struct {
		name, field string
		edit        func(f, m map[string]any) // tokenizer.json and its model
		cfg         string
	}{
		{"decoder type", "decoder type", func(f, m map[string]any) { f["decoder"] = map[string]any{"type": big} }, ""},
		{"model type", "model type", func(f, m map[string]any) { m["type"] = big }, ""},
		{"continuing_subword_prefix", "continuing_subword_prefix", func(f, m map[string]any) { m["continuing_subword_prefix"] = big }, ""},
		{"end_of_word_suffix", "end_of_word_suffix", func(f, m map[string]any) { m["end_of_word_suffix"] = big }, ""},
		{"vocab id too large", "model.vocab[", func(f, m map[string]any) { m["vocab"].(map[string]any)[big] = MaxTokenID + 1 }, ""},
		{"vocab id negative", "model.vocab[", func(f, m map[string]any) { m["vocab"].(map[string]any)[big] = -1 }, ""},
		{"two tokens one id", "model.vocab", func(f, m map[string]any) { m["vocab"].(map[string]any)[big] = 2 }, ""},
		{"unk_token", "model.unk_token", func(f, m map[string]any) { m["unk_token"] = big }, ""},
		{"merge of a missing token", "model.merges[1]", func(f, m map[string]any) { m["merges"] = []any{"h i", big + " i"} }, ""},
		{"merge without a space", "model.merges[1]", func(f, m map[string]any) { m["merges"] = []any{"h i", big} }, ""},
		{"merge not a string or pair", "model.merges[1]", func(f, m map[string]any) { m["merges"] = []any{"h i", []any{big}} }, ""},
		{"added token id too large", "added_tokens[0]", func(f, m map[string]any) {
			f["added_tokens"] = []any{map[string]any{"id": MaxTokenID + 1, "content": big, "special": true}}
		}, ""},
		{"added token on a vocab id", "added_tokens[0]", func(f, m map[string]any) {
			f["added_tokens"] = []any{map[string]any{"id": 2, "content": big, "special": true}}
		}, ""},
		{"two added tokens one id", "added_tokens[1]", func(f, m map[string]any) {
			f["added_tokens"] = []any{map[string]any{"id": 3, "content": big, "special": true}, map[string]any{"id": 3, "content": "y" + big, "special": true}}
		}, ""},
		{"normalizer type", "normalizer type", func(f, m map[string]any) { f["normalizer"] = map[string]any{"type": big} }, ""},
		{"pre_tokenizer type", "pre_tokenizer type", func(f, m map[string]any) { f["pre_tokenizer"] = map[string]any{"type": big} }, ""},
		{"split behavior", "split behavior", func(f, m map[string]any) {
			f["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "a"}, "behavior": big, "invert": false},
				map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}}}
		}, ""},
		{"regex with an anchor", "uses ^ or $", func(f, m map[string]any) {
			// at most maxRegexBytes reach the regex checks
			f["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "^" + big[:maxRegexBytes-1]}, "behavior": "Isolated", "invert": false},
				map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}}}
		}, ""},
		{"regex that does not compile", "regex", func(f, m map[string]any) {
			f["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(" + big[:maxRegexBytes-1]}, "behavior": "Isolated", "invert": false},
				map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}}}
		}, ""},
		{"bos_token not a token", "bos_token", nil, `{"bos_token": "` + big + `"}`},
		{"added token id of a million digits", "added_tokens.id", func(f, m map[string]any) {
			f["added_tokens"] = []any{map[string]any{"id": json.Number("9" + strings.Repeat("0", 1<<20)), "content": "<s>", "special": true}}
		}, ""},
	}
	for _, c := range hfCases {
		var f map[string]any
		if err := json.Unmarshal([]byte(strings.Replace(bosHF, "POST", byteLevelPost, 1)), &f); err != nil {
			t.Fatal(err)
		}
		if c.edit != nil {
			c.edit(f, f["model"].(map[string]any))
		}
		data, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "tokenizer.json")
		writeFile(t, path, data)
		file := path
		if c.cfg != "" {
			file = filepath.Join(dir, "tokenizer_config.json")
			writeFile(t, file, []byte(c.cfg))
		}
		_, err = LoadHF(path)
		check("tokenizer.json "+c.name, file, c.field, err)
	}

	// Kimi's tiktoken.model and tokenizer_config.json.
	ranks, err := os.ReadFile("../../testdata/tiktoken/kimi_tiny/tiktoken.model")
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(big))
	kimiCases := []struct {
		name, field string
		rankFile    string // replaces tiktoken.model when not ""
		cfg         string
	}{
		{"a line of one field", "line 321", string(ranks) + big + "\n", ""},
		{"a token not base64", "line 321: token", string(ranks) + "!" + big + " 320\n", ""},
		{"a rank not a number", "line 321: rank", string(ranks) + b64 + " " + big + "\n", ""},
		{"a token twice", "line 322: token", string(ranks) + b64 + " 320\n" + b64 + " 321\n", ""},
		{"tokenizer_class", "tokenizer_class", "", `{"tokenizer_class": "` + big + `"}`},
		{"added_tokens_decoder key", "added_tokens_decoder key", "", `{"added_tokens_decoder": {"` + big + `": {"content": "a"}}}`},
		{"added_tokens_decoder id out of range", "added_tokens_decoder[", "", `{"added_tokens_decoder": {"7": {"content": "` + big + `"}}}`},
		{"added_tokens_decoder keys of one id", "added_tokens_decoder keys", "", `{"added_tokens_decoder": {"320": {"content": "a"}, "0` + strings.Repeat("0", 1<<20) + `320": {"content": "b"}}}`},
		{"two specials one text", "special tokens", "", `{"added_tokens_decoder": {"320": {"content": "` + big + `"}, "321": {"content": "` + big + `"}}}`},
		{"bos_token not special", "bos_token", "", `{"bos_token": "` + big + `"}`},
	}
	for _, c := range kimiCases {
		dir := t.TempDir()
		path := filepath.Join(dir, "tiktoken.model")
		file := path
		rf := string(ranks)
		if c.rankFile != "" {
			rf = c.rankFile
		}
		writeFile(t, path, []byte(rf))
		if c.cfg != "" {
			file = filepath.Join(dir, "tokenizer_config.json")
			writeFile(t, file, []byte(c.cfg))
		}
		_, err := LoadKimi(path)
		check("kimi "+c.name, file, c.field, err)
	}

	// llama2.c's tokenizer.bin: piece 3 (where <0x00> belongs) is 1 MB.
	var bin []byte
	bin = binary.LittleEndian.AppendUint32(bin, uint32(len(big)))
	for i := range 259 {
		p := "<0x" + strings.ToUpper(strconv.FormatInt(int64(i-3), 16)) + ">"
		switch {
		case i < 3:
			p = []string{"<unk>", "<s>", "</s>"}[i]
		case i == 3:
			p = big
		case i < 3+16:
			p = "<0x0" + p[3:]
		}
		bin = binary.LittleEndian.AppendUint32(bin, math.Float32bits(0))
		bin = binary.LittleEndian.AppendUint32(bin, uint32(len(p)))
		bin = append(bin, p...)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.bin")
	writeFile(t, path, bin)
	_, err = LoadLlama2C(path)
	check("llama2.c byte piece", path, "token 3 is", err)

	// SentencePiece's tokenizer.model: piece 0 of type 9 (types are 1..6).
	var piece []byte
	piece = protowire.AppendTag(piece, 1, protowire.BytesType)
	piece = protowire.AppendString(piece, big)
	piece = protowire.AppendTag(piece, 3, protowire.VarintType)
	piece = protowire.AppendVarint(piece, 9)
	var model []byte
	model = protowire.AppendTag(model, 1, protowire.BytesType)
	model = protowire.AppendBytes(model, piece)
	path = filepath.Join(t.TempDir(), "tokenizer.model")
	writeFile(t, path, model)
	_, err = LoadSentencePiece(path)
	check("sentencepiece piece type", path, "piece 0", err)

	// ... and a BPE model whose normalizer, named in 1 MB, has a
	// precompiled_charsmap.
	piece = protowire.AppendTag(nil, 1, protowire.BytesType)
	piece = protowire.AppendString(piece, "a")
	trainer := protowire.AppendTag(nil, 3, protowire.VarintType)
	trainer = protowire.AppendVarint(trainer, 2)
	norm := protowire.AppendTag(nil, 1, protowire.BytesType)
	norm = protowire.AppendString(norm, big)
	norm = protowire.AppendTag(norm, 2, protowire.BytesType)
	norm = protowire.AppendBytes(norm, []byte{1})
	model = protowire.AppendTag(nil, 1, protowire.BytesType)
	model = protowire.AppendBytes(model, piece)
	model = protowire.AppendTag(model, 2, protowire.BytesType)
	model = protowire.AppendBytes(model, trainer)
	model = protowire.AppendTag(model, 3, protowire.BytesType)
	model = protowire.AppendBytes(model, norm)
	writeFile(t, path, model)
	_, err = LoadSentencePiece(path)
	check("sentencepiece normalizer name", path, "normalizer", err)
}

// writeFile writes data to path, failing t on an error.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
