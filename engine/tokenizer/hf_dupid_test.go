package tokenizer

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestHFDuplicateIDsRefused: a tokenizer.json that gives one id to two
// different strings (two model.vocab entries, an added token and a
// vocabulary entry, or two added tokens) is refused at load, naming the
// file, the id and both strings; before, it loaded and Decode of that id
// returned whichever string the map walk met last. An added token that
// repeats a vocabulary entry with the same id (DeepSeek-V3's
// tokenizer.json does so for 3 of its added tokens) still loads.
func TestHFDuplicateIDsRefused(t *testing.T) {
	for _, c := range []struct {
		repl []string
		want string
	}{
		{[]string{`"y": 10`, `"y": 9`}, `id 9 is given to both "x" and "y" in model.vocab`},
		{[]string{`"t": 8`, `"t": 0`}, `id 0 is given to both "a" and "t" in model.vocab`},
		{[]string{`{"id": 101, "content": "<Y>"`, `{"id": 5, "content": "<Y>"`}, `added_tokens[1] "<Y>" has id 5, which model.vocab gives to "bc"`},
		{[]string{`{"id": 103, "content": "<X>Z"`, `{"id": 100, "content": "<X>Z"`}, `added_tokens[3] "<X>Z" has id 100, which added_tokens[0] gives to "<X>"`},
	} {
		p := writeSynthHF(t, c.repl...)
		_, err := LoadHF(p)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), p+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v\nwant ErrFormat naming %s and %q", c.repl, err, p, c.want)
		}
	}
	// The legal HF layout: "<X>" both an added token and a vocabulary
	// entry, with the same id 100.
	tk, err := LoadHF(writeSynthHF(t, `"<0x71>": 13}`, `"<0x71>": 13, "<X>": 100}`))
	if err != nil {
		t.Fatalf("added token repeating its vocabulary entry: %v", err)
	}
	if got, err := tk.Encode("a<X>"); err != nil || !slices.Equal(got, []int32{0, 100}) {
		t.Errorf("Encode(a<X>) = %v, %v; want [0 100]", got, err)
	}
	if got := tk.Decode([]int32{100}); got != "<X>" {
		t.Errorf("Decode([100]) = %q, want <X>", got)
	}
}
