package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCheckRefusesBadTP: --tp below 1 is refused by check and diff as by
// every other command (`hsdb --tp 0`: "the world size must be at least
// 1"), also with --no-model, where no model load would catch it; it was
// taken as "unset" and the file judged.
func TestCheckRefusesBadTP(t *testing.T) {
	file := "../../testdata/captures/good_speculators.pt"
	for _, args := range [][]string{
		{"check", file, "--no-model", "--tp", "0"},
		{"check", file, "--no-model", "--tp", "-1"},
		{"diff", file, "--model", "../../testdata/hf/llama", "--tp", "0"},
	} {
		var out, errOut bytes.Buffer
		code := hsdbMain(args, stdio{Out: &out, Err: &errOut})
		if code == 0 || !strings.Contains(errOut.String(), "the world size must be at least 1") {
			t.Errorf("hsdb %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
	}
}
