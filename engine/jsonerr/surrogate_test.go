package jsonerr

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckSurrogates: lone halves of UTF-16 surrogate pairs are found
// with their byte offset (derived by hand); pairs, other escapes and an
// escaped backslash before "ud800" are not. encoding/json itself accepts
// every one of these inputs (the reason for the check), which the test
// confirms first.
func TestCheckSurrogates(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" for none
	}{
		{`{"a": "\ud800"}`, `lone surrogate \ud800 at byte 7`},
		{`{"a": "x\uDBFFy"}`, `lone surrogate \uDBFF at byte 8`},
		{`{"a": "\udc00\ud800"}`, `lone surrogate \udc00 at byte 7`},
		{`{"a": "\ud83d\u0041"}`, `lone surrogate \ud83d at byte 7`},
		{`["\ud83d\ude00", "\ud800"]`, `lone surrogate \ud800 at byte 18`},
		{`{"a": "\ud83d\ude00"}`, ""},
		{`{"a": "\\ud800"}`, ""},
		{`{"a": "\\\ud83d\ude00\n\"\u00e9"}`, ""},
		{`{"\u0041": 1}`, ""},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.in), &v); err != nil {
			t.Fatalf("%s: encoding/json refuses it (%v): the case tests nothing", c.in, err)
		}
		err := CheckSurrogates([]byte(c.in))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v; want none", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v; want %q", c.in, err, c.want)
		}
	}
}
