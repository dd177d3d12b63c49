package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestHFTokenIDsBounded: a tokenizer.json whose vocabulary or added tokens
// name an id far beyond any vocabulary is refused, naming the entry and
// the bound, before the id table is allocated: {"a": 2000000000} asked for
// a table of 2·10^9 strings (32 GB) and the process died. A value of the
// wrong JSON type, or too large for an id, is named in JSON's terms, not
// Go's ("cannot unmarshal string into Go struct field ... of type int32").
// The largest id hsdb reads is still accepted.
func TestHFTokenIDsBounded(t *testing.T) {
	for _, c := range []struct {
		repl []string
		want string
	}{
		{[]string{`"<0x71>": 13`, `"<0x71>": 2000000000`}, `model.vocab["<0x71>"] = 2000000000, more than the largest token id`},
		{[]string{`"<0x71>": 13`, fmt.Sprintf(`"<0x71>": %d`, MaxTokenID+1)}, `model.vocab["<0x71>"]`},
		{[]string{`{"id": 101, "content": "<Y>"`, `{"id": 2147483647, "content": "<Y>"`}, `added_tokens[1] "<Y>": id 2147483647`},
		{[]string{`"<0x71>": 13`, `"<0x71>": "13"`}, `vocab: got a JSON string, want`},
		{[]string{`"<0x71>": 13`, `"<0x71>": 3000000000`}, `got number 3000000000`},
		{[]string{`{"id": 101,`, `{"id": [101],`}, `added_tokens.id: got a JSON array`},
		{[]string{`"merges": [`, `"merges": {"a": 1}, "x": [`}, `model.merges: got a JSON object`},
	} {
		p := writeSynthHF(t, c.repl...)
		_, err := LoadHF(p)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%v: %v; want ErrFormat containing %q and no Go type names", c.repl, err, c.want)
		}
	}
	tk, err := LoadHF(writeSynthHF(t, `"<0x71>": 13`, fmt.Sprintf(`"<0x71>": %d`, MaxTokenID)))
	if err != nil {
		t.Fatalf("vocab id %d: %v", MaxTokenID, err)
	}
	if tk.VocabSize() != MaxTokenID+1 {
		t.Errorf("VocabSize = %d, want %d", tk.VocabSize(), MaxTokenID+1)
	}
}
