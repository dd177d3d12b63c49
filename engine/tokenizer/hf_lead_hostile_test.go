package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// TestHFLeadHostilePostProcessor: post_processors no tokenizers release
// writes. A negative leading id (a template's ids [-5], a cls of id -7;
// tokenizers' ids are u32, so its load fails) was taken, TextBOS returned
// it and every caller, testing >= 0, read it as "no BOS"; Sequences
// nested 4,900 deep were decoded again at every level (3.4 s); a
// processor type of 1 MB was quoted whole. Each is refused naming the
// field, and the quoted name is cut at 64 bytes with its size.
func TestHFLeadHostilePostProcessor(t *testing.T) {
	nest := func(n int, inner string) string {
		return strings.Repeat(`{"type": "Sequence", "processors": [`, n) + inner + strings.Repeat(`]}`, n)
	}
	big := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name, post string
		is         error
		want       string
	}{
		{"negative template id", strings.Replace(templatePost, `"ids": [3]`, `"ids": [-5]`, 1), ErrFormat, `post_processor.special_tokens["<s>"].ids is [-5], want a token id (>= 0)`},
		{"template id -1", strings.Replace(templatePost, `"ids": [3]`, `"ids": [-1]`, 1), ErrFormat, `ids is [-1]`},
		{"negative cls", `{"type": "BertProcessing", "cls": ["<s>", -7], "sep": ["</s>", 4]}`, ErrFormat, "post_processor.cls has id -7, want a token id (>= 0)"},
		{"negative cls in a Sequence", `{"type": "Sequence", "processors": [` + byteLevelPost + `, {"type": "RobertaProcessing", "cls": ["<s>", -2], "sep": ["</s>", 4]}]}`, ErrFormat, "post_processor.processors[1].cls has id -2"},
		{"nested 4900 deep", nest(4900, templatePost), ErrUnsupported, "Sequence processors nested more than 16 deep"},
		{"nested 17 deep", nest(17, templatePost), ErrUnsupported, "nested more than 16 deep"},
		{"a type of 1 MB", `{"type": "` + big + `"}`, ErrUnsupported, `post_processor type "` + strings.Repeat("x", 64) + `"... (1048576 bytes)`},
		{"a special token of 1 MB", `{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "` + big + `", "type_id": 0}}], "special_tokens": {}}`, ErrFormat, `special token "` + strings.Repeat("x", 64) + `"... (1048576 bytes), which`},
	} {
		_, err := LoadHF(writeBOSHF(t, c.post, ""))
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 1000 {
			t.Errorf("%s: %.300v; want %v naming %q, at most 1000 bytes", c.name, err, c.is, c.want)
		}
	}
	// 16 nested Sequences around the template are read: its <s> (id 3)
	// leads a text, as tokenizers' Sequence applies its processors in order.
	tk, err := LoadHF(writeBOSHF(t, nest(16, templatePost), ""))
	if err != nil {
		t.Fatalf("16 nested Sequences: %v", err)
	}
	if b := TextBOS(tk); b != 3 {
		t.Errorf("16 nested Sequences: TextBOS %d, want 3", b)
	}
}
