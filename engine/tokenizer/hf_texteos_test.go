package tokenizer

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// eosTemplatePost is the template LlamaTokenizerFast writes for
// add_bos_token and add_eos_token true: "<s> $A </s>".
const eosTemplatePost = `{"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "ids": [4], "tokens": ["</s>"]}}}`

// TestHFTextEOSFollowsTransformers: the ids of the text "hi" as `input
// text`, capture's text rows and generate --prompt build them (TextBOS,
// Encode, then TextEOS) against transformers' fast tokenizer's
// tokenizer("hi").input_ids, derived by hand from its rule
// (TokenizersBackend.update_post_processor, transformers v5: a config
// naming add_bos_token or add_eos_token rebuilds the template as
// "[<s> ]$A[ </s>]" from the two flags; otherwise tokenizer.json's
// post_processor applies, its template's last special token, or
// Bert/Roberta's sep, appended). Encode("hi") is [2] (h+i merge), <s> is
// 3 and </s> 4. Before, no EOS was ever appended: [2] or [3 2].
func TestHFTextEOSFollowsTransformers(t *testing.T) {
	eosOnly := strings.Replace(eosTemplatePost, `{"SpecialToken": {"id": "<s>", "type_id": 0}}, `, "", 1)
	sequence := `{"type": "Sequence", "processors": [` + byteLevelPost + `, ` + eosTemplatePost + `]}`
	roberta := `{"type": "RobertaProcessing", "sep": ["</s>", 4], "cls": ["<s>", 3], "trim_offsets": true, "add_prefix_space": false}`
	for _, c := range []struct {
		name, post, cfg string
		want            []int32
	}{
		{"add_eos_token true, ByteLevel", byteLevelPost, `{"eos_token": "</s>", "add_eos_token": true}`, []int32{2, 4}},
		{"add_bos_token and add_eos_token true", byteLevelPost, `{"bos_token": "<s>", "eos_token": {"content": "</s>"}, "add_bos_token": true, "add_eos_token": true}`, []int32{3, 2, 4}},
		{"add_eos_token false overrides a </s> template", eosTemplatePost, `{"bos_token": "<s>", "eos_token": "</s>", "add_eos_token": false}`, []int32{2}},
		{"only add_bos_token named: rebuilt without EOS", eosTemplatePost, `{"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true}`, []int32{3, 2}},
		{"no add_*: the <s> $A </s> template", eosTemplatePost, `{"eos_token": "</s>"}`, []int32{3, 2, 4}},
		{"no add_*: the $A </s> template", eosOnly, "", []int32{2, 4}},
		{"no add_*: Sequence with the template", sequence, `{"eos_token": "</s>"}`, []int32{3, 2, 4}},
		{"no add_*: RobertaProcessing", roberta, "", []int32{3, 2, 4}},
		{"no add_*: the <s> $A template adds no EOS", templatePost, `{"eos_token": "</s>"}`, []int32{3, 2}},
	} {
		tk, err := LoadHF(writeBOSHF(t, c.post, c.cfg))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		ids := textIDs(t, c.name, tk, "hi", true)
		if !slices.Equal(ids, c.want) {
			t.Errorf("%s: text ids %v, want %v", c.name, ids, c.want)
		}
	}
	// run.c encodes a prompt with eos=0; Kimi's tokenizer adds no EOS.
	if e := TextEOS(loadLlama2CTest(t)); e != -1 {
		t.Errorf("llama2c tok512: TextEOS = %d, want -1", e)
	}
	kimi, err := LoadKimi("../../testdata/tiktoken/kimi_tiny/tiktoken.model")
	if err != nil {
		t.Fatal(err)
	}
	if e := TextEOS(kimi); e != -1 {
		t.Errorf("kimi_tiny: TextEOS = %d, want -1", e)
	}
}

// TestHFTextEOSBadInput: a template whose trailing special token is not
// one id of the vocabulary, a sep that is not [token, id] and an
// add_eos_token that is not a boolean are refused, naming the field.
func TestHFTextEOSBadInput(t *testing.T) {
	for _, c := range []struct {
		name, post, cfg string
		want            string
	}{
		{"a trailing special token of two ids", strings.Replace(eosTemplatePost, `"ids": [4]`, `"ids": [4, 3]`, 1), "",
			`post_processor.single ends with special token "</s>"`},
		{"template id beyond the vocabulary", strings.Replace(eosTemplatePost, `"ids": [4]`, `"ids": [99]`, 1), "", "appends id 99"},
		{"bad sep", `{"type": "BertProcessing", "cls": ["<s>", 3], "sep": [4]}`, "", "post_processor.sep"},
		{"add_eos_token a string", byteLevelPost, `{"eos_token": "</s>", "add_eos_token": "yes"}`, `add_eos_token: want true, false or null, got "yes"`},
	} {
		_, err := LoadHF(writeBOSHF(t, c.post, c.cfg))
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrFormat naming %q", c.name, err, c.want)
		}
	}
}

// textIDs encodes text with tk as a text row is started and, with eos,
// ended: TextBOS first when there is one, TextEOS last when eos and there
// is one. It fails t, naming the case, when tk cannot encode it.
func textIDs(t *testing.T, name string, tk Tokenizer, text string, eos bool) []int32 {
	t.Helper()
	var ids []int32
	if b := TextBOS(tk); b >= 0 {
		ids = append(ids, b)
	}
	enc, err := tk.Encode(text)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ids = append(ids, enc...)
	if e := TextEOS(tk); eos && e >= 0 {
		ids = append(ids, e)
	}
	return ids
}
