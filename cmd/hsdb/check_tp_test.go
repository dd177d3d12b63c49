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

// TestCheckDiffImpossibleTP: --tp 8 on the DeepSeek-V3 fixture, whose 4
// attention heads (config.json num_attention_heads) 8 ranks cannot split
// (4 % 8 = 4), is a user error for check as for diff: both exit 2 naming
// the heads (README: check and diff share verdicts and exit codes). check
// warned and judged the file on shapes alone (exit 0) while diff failed.
// --tp 2 (4 % 2 = 0) is not refused, and neither is --tp 8 on the llama
// fixture's 8 heads.
func TestCheckDiffImpossibleTP(t *testing.T) {
	file := "../../testdata/captures/good.safetensors"
	const want = "num_attention_heads 4 is not divisible by --tp 8"
	for _, cmd := range []string{"check", "diff"} {
		_, errs, code := runHsdb(t, cmd, file, "--model", "../../testdata/hf/deepseek_v3", "--tp", "8")
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("hsdb %s --tp 8 (4 heads): exit %d, stderr %q; want exit 2 and %q", cmd, code, errs, want)
		}
	}
	if _, errs, _ := runHsdb(t, "check", file, "--model", "../../testdata/hf/deepseek_v3", "--tp", "8", "--no-model"); !strings.Contains(errs, want) {
		t.Errorf("check --no-model --tp 8 (4 heads): stderr %q; want %q", errs, want)
	}
	for _, args := range [][]string{
		{"check", file, "--model", "../../testdata/hf/deepseek_v3", "--tp", "2"},
		{"check", file, "--model", "../../testdata/hf/llama", "--tp", "8"},
	} {
		if _, errs, _ := runHsdb(t, args...); strings.Contains(errs, "is not divisible") {
			t.Errorf("hsdb %s: refused a --tp that divides the heads: %s", strings.Join(args, " "), errs)
		}
	}
}
