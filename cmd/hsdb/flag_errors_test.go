package main

import (
	"strings"
	"testing"
)

// TestFlagErrorsInHsdbWords: a bad flag is named as the user typed it
// (--name) with what it takes, on stderr, exit 2; the flag package's own
// text (`invalid value "abc" for flag -tp: parse error`, `flag provided
// but not defined: -bogus`) was printed before.
func TestFlagErrorsInHsdbWords(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "x", "--tp", "abc"}, `hsdb check: --tp "abc": want a whole number`},
		{[]string{"check", "x", "--tp", "99999999999999999999"}, `hsdb check: --tp "99999999999999999999": want a whole number in range`},
		{[]string{"check", "x", "--json=maybe"}, `hsdb check: --json "maybe": want true or false`},
		{[]string{"check", "x", "--worker-timeout", "5x"}, `hsdb check: --worker-timeout "5x": want a duration such as 90s or 10m`},
		{[]string{"check", "x", "--bogus"}, "hsdb check: unknown flag --bogus"},
		{[]string{"check", "x", "--tp"}, "hsdb check: --tp needs a value"},
		{[]string{"--tp", "abc", "-x", "/dev/null"}, `hsdb: --tp "abc": want a whole number`},
		{[]string{"plan", "--tp", "x"}, `hsdb plan: --tp "x": want a whole number`},
		{[]string{"convert", "llama2c", "in.bin", "--bogus"}, "hsdb convert llama2c: unknown flag --bogus"},
	} {
		_, errs, code := runHsdb(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want+"\n") || strings.Contains(errs, "parse error") || strings.Contains(errs, "provided but not defined") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
	}
}
