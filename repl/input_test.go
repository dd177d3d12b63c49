package repl

import (
	"fmt"
	"strings"
	"testing"

	"hsdb/engine/tokenizer"
)

// TestInputTextQuoting: a quoted text may hold ';' and Go/JSON escapes;
// each sequence's ids are BOS (1) followed by the tokenizer's own encoding
// of the Go string the escapes stand for.
func TestInputTextQuoting(t *testing.T) {
	f := newFake(t, 1)
	tok, err := tokenizer.LoadLlama2C(storiesTok)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(text string) string {
		e, err := tok.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		s := []string{"1"}
		for _, id := range e {
			s = append(s, fmt.Sprint(id))
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	for _, tc := range []struct{ line, want string }{
		{`input text "Hello; world"`, "Hello; world"},
		{`input text "tab\there\nnewline"`, "tab\there\nnewline"},
		{`input text "say \"hi\" \\ back\/slash"`, `say "hi" \ back/slash`},
		{`input text "caf\u00e9 \U0001F600 \ud83d\ude00"`, "café 😀 😀"},
		{`input text 'no \n escapes; here'`, `no \n escapes; here`},
	} {
		out := f.AssertExec(tc.line, "1 sequence, ")
		if !strings.Contains(out, "seq 0: "+ids(tc.want)) {
			t.Errorf("%s: want ids %s for %q:\n%s", tc.line, ids(tc.want), tc.want, out)
		}
	}
	out := f.AssertExec(`input text "a;b" ; ids 1,2 ; text "c"`, "3 sequences", "seq 1: [1, 2]")
	if !strings.Contains(out, "seq 0: "+ids("a;b")) || !strings.Contains(out, "seq 2: "+ids("c")) {
		t.Fatalf("three sequences:\n%s", out)
	}
	f.AssertError(`input text "bad \q escape"`, `unknown escape \q`)
	f.AssertError(`input text "\u12"`, `\u needs 4 hex digits`)
	f.AssertError(`input text "open`, `unterminated " quote`)
	f.AssertError(`input text "\ud83d alone"`, "half of a surrogate pair")
}
