package main

import (
	"strings"
	"testing"
)

// TestFlagGivenTwiceRefused: a flag given twice with different values is
// refused, naming both, exit 2, before anything runs; package flag kept the
// last and dropped the first without a word (`generate --prompt A --prompt
// B` generated from B alone, `plan --tp 2 --tp 4` planned tp 4). The same
// value twice is taken, and convert's --tokenizer, which is repeatable,
// still takes several.
func TestFlagGivenTwiceRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--prompt", "Once upon", "--prompt", "The dog", "-n", "4"}, `hsdb generate: --prompt "The dog": given twice, first as "Once upon": each flag takes one value`},
		{[]string{"generate", "--ids", "1,2", "--ids=1,3", "-n", "4"}, `hsdb generate: --ids "1,3": given twice, first as "1,2"`},
		{[]string{"plan", "--tp", "2", "--tp", "4"}, `hsdb plan: --tp "4": given twice, first as "2"`},
		{[]string{"plan", "--ep", "--ep=false"}, `hsdb plan: --ep "false": given twice, first as "true"`},
		{[]string{"check", "x", "--layers", "0", "--layers", "1"}, `hsdb check: --layers "1": given twice, first as "0"`},
		{[]string{"diff", "--layers", "0", "x", "--layers", "1"}, `hsdb diff: --layers "1": given twice, first as "0"`},
		{[]string{"--tp", "2", "--tp", "4", "-x", "/dev/null"}, `hsdb: --tp "4": given twice, first as "2"`},
		{[]string{"convert", "llama2c", "in.bin", "--out", "a", "--out", "b"}, `hsdb convert llama2c: --out "b": given twice, first as "a"`},
	} {
		out, errs, code := runHsdb(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout and %q", c.args, code, out, errs, c.want)
		}
	}
	// The same value twice is one value: plan runs (tp 2 in its header).
	out, errs, code := runHsdb(t, "plan", "--tp", "2", "--tp=2", "--max-tokens", "16")
	if code != 0 || !strings.Contains(out, "at --tp 2,") {
		t.Errorf("plan --tp 2 --tp=2: exit %d, stdout %q, stderr %q; want exit 0 and a plan at --tp 2", code, out, errs)
	}
}
