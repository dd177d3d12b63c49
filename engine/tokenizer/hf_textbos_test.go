package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bosHF is a tokenizer.json of two letters and one merge ("h i" -> "hi",
// id 2) with <s> (id 3) and </s> (id 4) as special added tokens; POST is
// its post_processor.
const bosHF = `{
  "added_tokens": [
    {"id": 3, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 4, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "post_processor": POST,
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
    "vocab": {"h": 0, "i": 1, "hi": 2}, "merges": ["h i"]},
  "decoder": {"type": "ByteLevel"}
}`

const (
	byteLevelPost = `{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`
	// The template LlamaTokenizerFast writes for add_bos_token true: "<s> $A".
	templatePost = `{"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]}}}`
)

// writeBOSHF writes bosHF with post_processor post into a directory of its
// own, with tokenizer_config.json cfg beside it unless cfg is "".
func writeBOSHF(t *testing.T, post, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(p, []byte(strings.Replace(bosHF, "POST", post, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg != "" {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestHFTextBOSFollowsTransformers: the ids of the text "hi" as `input
// text`, capture's text rows and generate --prompt build them (TextBOS,
// then Encode), against what transformers' fast tokenizer returns for
// tokenizer("hi").input_ids, derived by hand from its rule
// (TokenizersBackend in tokenization_utils_tokenizers.py: add_bos_token or
// add_eos_token in tokenizer_config.json rebuilds the post_processor as
// "<s> $A" when add_bos_token is true and "$A" otherwise; without them
// tokenizer.json's post_processor applies; a null one is rebuilt with
// add_bos_token false). Encode("hi") is [2] (h+i merge). Before, every
// config with a bos_token gave [3 2], add_bos_token false included.
func TestHFTextBOSFollowsTransformers(t *testing.T) {
	sequence := `{"type": "Sequence", "processors": [` + byteLevelPost + `, ` + templatePost + `]}`
	for _, c := range []struct {
		name, post, cfg string
		want            []int32
	}{
		{"add_bos_token false, ByteLevel", byteLevelPost, `{"bos_token": "<s>", "add_bos_token": false}`, []int32{2}},
		{"add_bos_token false overrides a <s> template", templatePost, `{"bos_token": "<s>", "add_bos_token": false}`, []int32{2}},
		{"add_bos_token true, ByteLevel (DeepSeek-V3's layout)", byteLevelPost, `{"bos_token": {"content": "<s>"}, "add_bos_token": true}`, []int32{3, 2}},
		{"add_bos_token true without a bos_token", byteLevelPost, `{"add_bos_token": true}`, []int32{2}},
		{"add_bos_token null", templatePost, `{"bos_token": "<s>", "add_bos_token": null}`, []int32{2}},
		{"only add_eos_token named: rebuilt without BOS", templatePost, `{"bos_token": "<s>", "add_eos_token": false}`, []int32{2}},
		{"no add_*: the <s> template", templatePost, `{"bos_token": "<s>"}`, []int32{3, 2}},
		{"no add_*: ByteLevel adds nothing", byteLevelPost, `{"bos_token": "<s>"}`, []int32{2}},
		{"no add_*: Sequence with the template", sequence, `{"bos_token": "<s>"}`, []int32{3, 2}},
		{"no add_*: null post_processor", "null", `{"bos_token": "<s>"}`, []int32{2}},
		{"no tokenizer_config.json: the template", templatePost, "", []int32{3, 2}},
		{"no tokenizer_config.json: ByteLevel", byteLevelPost, "", []int32{2}},
	} {
		tk, err := LoadHF(writeBOSHF(t, c.post, c.cfg))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if ids := textIDs(t, c.name, tk, "hi", false); !slices.Equal(ids, c.want) {
			t.Errorf("%s: text ids %v, want %v", c.name, ids, c.want)
		}
	}
	// BOS() stays the config's bos_token (stops, check's restarts) when
	// add_bos_token false keeps it off texts.
	tk, err := LoadHF(writeBOSHF(t, byteLevelPost, `{"bos_token": "<s>", "add_bos_token": false}`))
	if err != nil || tk.BOS() != 3 {
		t.Errorf("BOS() with add_bos_token false: %v, %v; want 3", tk, err)
	}
}

// TestHFTextBOSBadInput: a template whose leading special token is not
// one id of the vocabulary, a cls that is not [token, id], an unknown processor type and an
// add_bos_token that is not a boolean are refused, naming the field.
func TestHFTextBOSBadInput(t *testing.T) {
	for _, c := range []struct {
		name, post, cfg string
		is              error
		want            string
	}{
		{"a leading special token of two ids", strings.Replace(templatePost, `"ids": [3]`, `"ids": [3, 4]`, 1), "", ErrFormat,
			`post_processor.single starts with special token "<s>"`},
		{"bad cls", `{"type": "RobertaProcessing", "cls": ["<s>"], "sep": ["</s>", 4]}`, "", ErrFormat, "post_processor.cls"},
		{"template id beyond the vocabulary", strings.Replace(templatePost, `"ids": [3]`, `"ids": [99]`, 1), "", ErrFormat, "prepends id 99"},
		{"unknown processor", `{"type": "Mystery"}`, "", ErrUnsupported, `post_processor type "Mystery"`},
		{"add_bos_token a string", byteLevelPost, `{"bos_token": "<s>", "add_bos_token": "yes"}`, ErrFormat, `add_bos_token: want true, false or null, got "yes"`},
	} {
		_, err := LoadHF(writeBOSHF(t, c.post, c.cfg))
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %v naming %q", c.name, err, c.is, c.want)
		}
	}
}
