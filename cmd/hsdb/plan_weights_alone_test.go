package main

import (
	"strings"
	"testing"
)

// TestPlanWeightsAloneRefusesKVFlags: `plan --max-tokens 0 --seq-len 10`
// (or --seqs 3) printed "none counted (--max-tokens 0: weights alone)"
// and dropped the flag without a word; a flag the others rule out is
// refused (exit 2), naming both. And a one-token plan read "; 1 tokens"
// and "1 sequence of up to 1 tokens": stories260K at --max-tokens 1 says
// "1 token" in both places.
func TestPlanWeightsAloneRefusesKVFlags(t *testing.T) {
	for _, f := range [][]string{{"--seq-len", "10"}, {"--seqs", "3"}} {
		_, errs, code := runHsdb(t, append([]string{"plan", "--max-tokens", "0"}, f...)...)
		if code != 2 || !strings.Contains(errs, f[0]+" with --max-tokens 0") {
			t.Errorf("--max-tokens 0 %s: exit %d, stderr %q; want exit 2 naming %s and --max-tokens 0", strings.Join(f, " "), code, errs, f[0])
		}
	}
	out, errs, code := runHsdb(t, "plan", "--max-tokens", "1")
	if code != 0 || !strings.Contains(out, "; 1 token\n") || !strings.Contains(out, "; 1 sequence of up to 1 token (--seqs") || strings.Contains(out, "1 tokens") {
		t.Errorf("--max-tokens 1: exit %d (stderr %q):\n%s", code, errs, out)
	}
}
