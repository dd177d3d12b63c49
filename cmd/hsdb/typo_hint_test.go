package main

import (
	"strings"
	"testing"
)

// TestSubcommandAndFlagTypos: a mistyped subcommand or flag is answered
// with the nearest name (chek → check, gneerate → generate: two letters
// swapped; --modle → --model; --max-token → --max-tokens), exit 2; a
// name near nothing gets no guess.
func TestSubcommandAndFlagTypos(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"chek", "x"}, `hsdb: unexpected "chek": did you mean hsdb check?`},
		{[]string{"gneerate"}, `hsdb: unexpected "gneerate": did you mean hsdb generate?`},
		{[]string{"check", "x", "--modle", "m"}, "hsdb check: unknown flag --modle: did you mean --model?\n"},
		{[]string{"plan", "--max-token", "3"}, "hsdb plan: unknown flag --max-token: did you mean --max-tokens?\n"},
		{[]string{"plan", "--bogus"}, "hsdb plan: unknown flag --bogus\n"},
	} {
		_, errs, code := runHsdb(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
	}
}
