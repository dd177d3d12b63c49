package tokenizer

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// spFlagCases are scripts/sp_flags_reference.py's cases: name,
// tokenizer_config.json, config.json ("" for none). The expected ids are
// in testdata/sp_flags.expected.json, which that script wrote with
// transformers 5.17.0 on the GPU machine.
var spFlagCases = []struct{ name, tokCfg, cfg string }{
	{"class_only", `{"tokenizer_class": "LlamaTokenizer"}`, ""},
	{"add_eos", `{"tokenizer_class": "LlamaTokenizer", "add_eos_token": true}`, ""},
	{"no_bos", `{"tokenizer_class": "LlamaTokenizer", "add_bos_token": false}`, ""},
	{"both", `{"tokenizer_class": "LlamaTokenizer", "add_bos_token": true, "add_eos_token": true}`, ""},
	{"null_bos", `{"tokenizer_class": "LlamaTokenizer", "add_bos_token": null}`, ""},
	{"no_bos_add_eos", `{"tokenizer_class": "LlamaTokenizer", "add_bos_token": false, "add_eos_token": true}`, ""},
	{"model_type_only", `{}`, `{"model_type": "llama"}`},
	{"model_type_add_eos", `{"add_eos_token": true}`, `{"model_type": "llama"}`},
	{"class_and_model_type", `{"tokenizer_class": "LlamaTokenizer"}`, `{"model_type": "llama"}`},
	{"class_and_model_type_both", `{"tokenizer_class": "LlamaTokenizer", "add_bos_token": true, "add_eos_token": true}`, `{"model_type": "llama"}`},
	{"legacy_false_bos", `{"tokenizer_class": "LlamaTokenizer", "legacy": false, "add_bos_token": true}`, ""},
}

// spDir writes tok512.model as dir/tokenizer.model with the given
// tokenizer_config.json and config.json ("" leaves a file out) and returns
// the tokenizer.model path.
func spDir(t *testing.T, tokCfg, cfg string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/tok512.model")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"tokenizer.model": string(data), "tokenizer_config.json": tokCfg, "config.json": cfg} {
		if body == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "tokenizer.model")
}

// TestSentencePieceHFFlags: a bare tokenizer.model with a
// tokenizer_config.json gives, for "Hello world", the ids transformers
// 5.17's AutoTokenizer gives (add_special_tokens on), its bos and eos ids
// and its class, in all eight recorded cases: LlamaTokenizer adds no BOS
// unless add_bos_token is true and an EOS when add_eos_token is true;
// TokenizersBackend (no tokenizer_class, model_type llama) puts no "▁"
// before the text, so "Hello" starts "H" "e" instead of "▁He".
func TestSentencePieceHFFlags(t *testing.T) {
	data, err := os.ReadFile("testdata/sp_flags.expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string]json.RawMessage
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	var version string
	if err := json.Unmarshal(ref["transformers"], &version); err != nil || version != "5.17.0" {
		t.Fatalf("sp_flags.expected.json: transformers %q (%v), want 5.17.0", version, err)
	}
	if len(ref) != len(spFlagCases)+1 {
		t.Fatalf("sp_flags.expected.json has %d entries, want transformers and %d cases", len(ref), len(spFlagCases))
	}
	for _, c := range spFlagCases {
		var want struct {
			IDs      []int32 `json:"ids"`
			BOS, EOS *int32
			Class    string             `json:"class"`
			Error    string             `json:"error"`
			More     map[string][]int32 `json:"more"`
		}
		raw, ok := ref[c.name]
		if !ok {
			t.Errorf("%s: not in sp_flags.expected.json", c.name)
			continue
		}
		if err := json.Unmarshal(raw, &want); err != nil || want.Error != "" || len(want.IDs) == 0 || want.BOS == nil || want.EOS == nil || want.Class == "" {
			t.Errorf("%s: reference %s unusable (%v)", c.name, raw, err)
			continue
		}
		tok, err := LoadSentencePieceDir(spDir(t, c.tokCfg, c.cfg))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := textIDs(t, c.name, tok, "Hello world", true); !slices.Equal(got, want.IDs) {
			t.Errorf("%s: ids %v, transformers %v", c.name, got, want.IDs)
		}
		if len(want.More) != 5 {
			t.Errorf("%s: %d more strings in the reference, want 5", c.name, len(want.More))
		}
		for text, ids := range want.More {
			if got := textIDs(t, c.name, tok, text, true); !slices.Equal(got, ids) && !(len(got) == 0 && len(ids) == 0) {
				t.Errorf("%s: %q ids %v, transformers %v", c.name, text, got, ids)
			}
		}
		if tok.BOS() != *want.BOS || tok.EOS() != *want.EOS {
			t.Errorf("%s: BOS %d EOS %d, transformers %d %d", c.name, tok.BOS(), tok.EOS(), *want.BOS, *want.EOS)
		}
		if !strings.Contains(tok.Name(), " "+want.Class+" ") {
			t.Errorf("%s: Name %q does not name transformers' class %s", c.name, tok.Name(), want.Class)
		}
	}
}

// TestSentencePieceDirWithoutConfig: without tokenizer_config.json (a
// directory `hsdb convert llama2c` wrote) nothing changes: sentencepiece's
// ids (testdata/tok512.expected.json, from the sentencepiece library) and
// llama2.c run.c's BOS 1 before a text, no EOS after it.
func TestSentencePieceDirWithoutConfig(t *testing.T) {
	tok, err := LoadSentencePieceDir(spDir(t, "", `{"model_type": "llama"}`))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name() != "sentencepiece:tokenizer.model" || TextBOS(tok) != 1 || TextEOS(tok) != -1 || tok.BOS() != 1 || tok.EOS() != 2 {
		t.Fatalf("Name %q TextBOS %d TextEOS %d BOS %d EOS %d, want sentencepiece:tokenizer.model 1 -1 1 2", tok.Name(), TextBOS(tok), TextEOS(tok), tok.BOS(), tok.EOS())
	}
	exp := loadExpected(t, "tok512")
	if len(exp.Cases) == 0 {
		t.Fatal("tok512.expected.json has no results")
	}
	for _, r := range exp.Cases {
		if r.Error != "" {
			continue
		}
		got, _ := tok.Encode(r.Text)
		if !slices.Equal(got, r.IDs) {
			t.Errorf("%q: %v, sentencepiece %v", r.Text, got, r.IDs)
		}
	}
}

// TestSentencePieceHFText: transformers' pipelines on texts the recorded
// run did not cover, derived by hand from the pieces of tok512.model and
// the code LoadSentencePieceDir cites: no space is removed (Metaspace and
// Replace keep every one: "▁" 410), special tokens in the text are cut
// out as their ids, and only the stretch at offset 0 gets LlamaTokenizer's
// "▁" (prepend_scheme "first").
func TestSentencePieceHFText(t *testing.T) {
	llama, err := LoadSentencePieceDir(spDir(t, `{"tokenizer_class": "LlamaTokenizer"}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	backend, err := LoadSentencePieceDir(spDir(t, `{}`, `{"model_type": "llama"}`))
	if err != nil {
		t.Fatal(err)
	}
	always, err := LoadSentencePieceDir(spDir(t, `{"tokenizer_class": "LlamaTokenizer", "legacy": true}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	noPrefix, err := LoadSentencePieceDir(spDir(t, `{"tokenizer_class": "LlamaTokenizer", "add_prefix_space": false}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	// Llama-2's tokenizer_config.json layout (its added_tokens_decoder
	// names the model's own pieces), plus "he" as an added token: HF cuts
	// added tokens out of the raw text before the pre-tokenizer.
	added, err := LoadSentencePieceDir(spDir(t, `{"tokenizer_class": "LlamaTokenizer", "legacy": false, "add_bos_token": true,
		"added_tokens_decoder": {"0": {"content": "<unk>", "special": true, "normalized": false},
		"1": {"content": "<s>", "special": true}, "2": {"content": "</s>", "special": true}, "260": {"content": "he", "special": false}}}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	// tok512's pieces: "he" 260 (score -1), "▁h" 270 (-11), "▁he" 281
	// (-22), "ll" 306 (-47), "▁" 410, "o" 414, "i" 417; "▁▁", "hi", "el"
	// and "lo" are none. BPE merges the highest score first.
	for _, c := range []struct {
		name string
		tok  *SentencePiece
		text string
		want []int32
	}{
		// "▁hello" (no second "▁": it starts with one): "he", "▁he", "ll".
		{"llama", llama, " hello", []int32{281, 306, 414}},
		// "▁▁hello": sentencepiece would drop the spaces ([281 306 414]).
		{"llama", llama, "  hello", []int32{410, 281, 306, 414}},
		{"backend", backend, " hello", []int32{281, 306, 414}},
		// "hello" without a "▁": "he" 260, "ll", "o".
		{"backend", backend, "hello", []int32{260, 306, 414}},
		{"no prefix", noPrefix, "hello", []int32{260, 306, 414}},
		// <s> is cut out (1); "hello" after it is not at offset 0.
		{"llama", llama, "<s>hello", []int32{1, 260, 306, 414}},
		{"legacy", always, "<s>hello", []int32{1, 281, 306, 414}},
		// "▁hi": "▁h" 270, "i" 417; </s> 2; "hello" as above.
		{"llama", llama, "hi</s>hello", []int32{270, 417, 2, 260, 306, 414}},
		{"legacy", always, "hi</s>hello", []int32{270, 417, 2, 281, 306, 414}},
		// "he" 260 cut out at offset 0 (so no "▁" before it), then "llo":
		// "ll" 306, "o" 414; after " " ("▁" 410) the same.
		{"added", added, "hello", []int32{260, 306, 414}},
		{"added", added, " hello", []int32{410, 260, 306, 414}},
		{"backend", backend, "", []int32{}},
		{"llama", llama, "", []int32{}},
	} {
		got, err := c.tok.Encode(c.text)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: Encode(%q) = %v, %v; want %v", c.name, c.text, got, err, c.want)
		}
	}
	if TextBOS(added) != 1 || TextEOS(added) != -1 {
		t.Errorf("add_bos_token true: TextBOS %d TextEOS %d, want 1 -1", TextBOS(added), TextEOS(added))
	}
	if _, err := llama.Encode("\xff"); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: err %v, want ErrInvalidUTF8", err)
	}
}

// TestSentencePieceHFRefuses: what hsdb cannot reproduce exactly, or what
// is malformed, is refused naming the field, never encoded another way.
func TestSentencePieceHFRefuses(t *testing.T) {
	for _, c := range []struct {
		tokCfg, cfg string
		want        error
		msg         string
	}{
		{`{"tokenizer_class": "LlamaTokenizer"}`, `{"model_type": "qwen2"}`, ErrUnsupported, `model_type "qwen2"`},
		{`{"tokenizer_class": "GemmaTokenizer"}`, "", ErrUnsupported, `tokenizer_class "GemmaTokenizer"`},
		{`{"tokenizer_class": 3}`, "", ErrFormat, "tokenizer_class: want a string"},
		{`{"add_bos_token": "yes"}`, "", ErrFormat, "add_bos_token: want true, false or null"},
		{`{"bos_token": "<|begin|>"}`, "", ErrUnsupported, `bos_token "<|begin|>" is not a piece`},
		{`{"eos_token": {"content": "</s>", "rstrip": true}}`, "", ErrUnsupported, "eos_token \"</s>\" sets lstrip, rstrip or single_word"},
		{`{"added_tokens_decoder": {"1": {"content": "<bos>"}}}`, "", ErrUnsupported, `added_tokens_decoder[1] "<bos>" is not piece 1`},
		{`{"added_tokens_decoder": {"x": {"content": "<s>"}}}`, "", ErrFormat, `key "x" is not a token id`},
		{`{"added_tokens_decoder": {"260": {"content": "he", "lstrip": true}}}`, "", ErrUnsupported, `added_tokens_decoder[260] "he" sets lstrip`},
		{`{"added_tokens_decoder": {"281": {"content": "▁he", "normalized": true}}}`, "", ErrUnsupported, `is normalized and holds a space`},
		{`{"additional_special_tokens": ["<new>"]}`, "", ErrUnsupported, `additional_special_tokens[0] "<new>" is not a piece`},
		{`[1, 2]`, "", ErrFormat, "tokenizer_config.json"},
		{`{}`, `{"model_type": 7}`, ErrFormat, "model_type: want a string"},
	} {
		p := spDir(t, c.tokCfg, c.cfg)
		_, err := LoadSentencePieceDir(p)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s / %s: err = %v, want %v with %q", c.tokCfg, c.cfg, err, c.want, c.msg)
		}
	}
	// Models sentencepiece and transformers can part on: a normal piece's
	// score not below the one before it (piece 400 given piece 300's
	// score), an UNUSED piece.
	for _, c := range []struct {
		score float32
		typ   int32
		msg   string
	}{
		{-41, spNormal, "piece 400 "},
		{-141, spUnused, "is of type UNUSED"},
	} {
		data, err := os.ReadFile("testdata/tok512.model")
		if err != nil {
			t.Fatal(err)
		}
		p := spDir(t, `{"tokenizer_class": "LlamaTokenizer"}`, "")
		if err := os.WriteFile(p, rewritePiece(t, data, 400, c.score, c.typ), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSentencePieceDir(p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("piece 400 score %g type %d: err = %v, want ErrUnsupported with %q", c.score, c.typ, err, c.msg)
		}
		if _, err := LoadSentencePiece(p); err != nil { // sentencepiece itself takes it
			t.Errorf("LoadSentencePiece: %v", err)
		}
	}
}

// rewritePiece returns the ModelProto data with piece index's score and
// type replaced.
func rewritePiece(t *testing.T, data []byte, index int, score float32, typ int32) []byte {
	t.Helper()
	var out []byte
	n := 0
	for off := 0; off < len(data); {
		num, wt, tn := protowire.ConsumeTag(data[off:])
		vn := protowire.ConsumeFieldValue(num, wt, data[off+tn:])
		if tn < 0 || vn < 0 {
			t.Fatalf("bad proto at %d", off)
		}
		field := data[off : off+tn+vn]
		if num == 1 && wt == protowire.BytesType {
			if n == index {
				body, _ := protowire.ConsumeBytes(data[off+tn:])
				var text []byte
				for o := 0; o < len(body); {
					fn, fwt, ftn := protowire.ConsumeTag(body[o:])
					fvn := protowire.ConsumeFieldValue(fn, fwt, body[o+ftn:])
					if fn == 1 {
						text, _ = protowire.ConsumeBytes(body[o+ftn:])
					}
					o += ftn + fvn
				}
				var p []byte
				p = protowire.AppendTag(p, 1, protowire.BytesType)
				p = protowire.AppendBytes(p, text)
				p = protowire.AppendTag(p, 2, protowire.Fixed32Type)
				p = protowire.AppendFixed32(p, math.Float32bits(score))
				p = protowire.AppendTag(p, 3, protowire.VarintType)
				p = protowire.AppendVarint(p, uint64(typ))
				field = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), p)
			}
			n++
		}
		out = append(out, field...)
		off += tn + vn
	}
	if n <= index {
		t.Fatalf("the model has %d pieces", n)
	}
	return out
}
