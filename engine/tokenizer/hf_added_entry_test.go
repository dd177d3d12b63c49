package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// TestHFAddedTokenEntryErrors: an added_tokens entry without an id or a
// content, with an empty content or a negative id, is refused naming the
// entry and what it lacks. The error said "added_tokens[0]: id 100,
// content \"\"" (not what was wrong), and an entry without "id" was read
// as id 0 and refused as "has id 0, which model.vocab gives to \"a\"",
// an id the file never wrote. HF tokenizers refuses a missing id or
// content too (serde: missing field) and a negative one (a u32).
func TestHFAddedTokenEntryErrors(t *testing.T) {
	for _, c := range []struct {
		repl []string
		want string
	}{
		{[]string{`{"id": 100, "content": "<X>",`, `{"content": "<X>",`}, `added_tokens[0] "<X>" has no id`},
		{[]string{`{"id": 100, "content": "<X>",`, `{"id": 100,`}, `added_tokens[0] (id 100) has no content`},
		{[]string{`{"id": 100, "content": "<X>",`, `{"id": 100, "content": null,`}, `added_tokens[0] (id 100) has no content`},
		{[]string{`{"id": 100, "content": "<X>",`, `{"id": 100, "content": "",`}, `added_tokens[0] (id 100) has an empty content: there is no text to match`},
		{[]string{`{"id": 100, "content": "<X>",`, `{"id": -1, "content": "<X>",`}, `added_tokens[0] "<X>": id -1 is negative`},
		{[]string{`{"id": 100, "content": "<X>",`, `{"id": null, "content": "<X>",`}, `added_tokens[0] "<X>" has no id`},
	} {
		p := writeSynthHF(t, c.repl...)
		_, err := LoadHF(p)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), p+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v\nwant ErrFormat naming %s and %q", c.repl, err, p, c.want)
		}
	}
}
