package tokenizer

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestHFDuplicateContentRefused: a tokenizer.json whose added_tokens give
// one string two ids (an added token repeating a model.vocab entry, or an
// earlier added token, under another id) is refused at load, naming the
// file, the string and both ids. Before, it loaded and text encoded to one
// id while TokenID (bos_token, eos_token) gave the other: with "bc" = 5 in
// model.vocab and added token {"id": 103, "content": "bc"}, Encode("bc")
// was [103] where HF tokenizers gives [5] (its AddedVocabulary takes the
// id the string already has and warns "Token 'bc' was expected to have ID
// '103' but was given ID '5'"); with two added tokens "<X>" (ids 100 and
// 103), Encode("a<X>") was [0 100] and TokenID("<X>") 103.
func TestHFDuplicateContentRefused(t *testing.T) {
	for _, c := range []struct {
		repl []string
		want string
	}{
		{[]string{`{"id": 103, "content": "<X>Z"`, `{"id": 103, "content": "bc"`},
			`added_tokens[3] "bc" has id 103, but model.vocab gives "bc" id 5`},
		{[]string{`{"id": 103, "content": "<X>Z"`, `{"id": 103, "content": "<X>"`},
			`added_tokens[3] "<X>" has id 103, but added_tokens[0] gives "<X>" id 100`},
	} {
		p := writeSynthHF(t, c.repl...)
		_, err := LoadHF(p)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), p+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v\nwant ErrFormat naming %s and %q", c.repl, err, p, c.want)
		}
	}
	// An added token repeating an earlier one with the same id (and a
	// vocabulary entry with its own id, as DeepSeek-V3's file does) loads,
	// and text and TokenID agree on the id.
	tk, err := LoadHF(writeSynthHF(t, `{"id": 103, "content": "<X>Z"`, `{"id": 100, "content": "<X>"`,
		`"<0x71>": 13}`, `"<0x71>": 13, "<X>": 100}`))
	if err != nil {
		t.Fatalf("added token repeated with its own id: %v", err)
	}
	ids, err := tk.Encode("a<X>")
	if id, ok := tk.TokenID("<X>"); err != nil || !slices.Equal(ids, []int32{0, 100}) || !ok || id != 100 {
		t.Errorf("Encode(a<X>) = %v, %v; TokenID(<X>) = %d, %v; want [0 100] and 100", ids, err, id, ok)
	}
}
