package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestGenerateIDsPasteBack: without a tokenizer `hsdb generate` printed the
// generated ids as Go prints a slice ("[32 32 12]"), which --ids refuses;
// it prints them as --ids takes them: -n 5 from a 3-token prompt runs
// positions 0-4 and samples positions 3, 4 and 5 (run.c's -n counts the
// prompt), so 3 ids separated by commas, which --ids then parses.
func TestGenerateIDsPasteBack(t *testing.T) {
	out, errs, code := runHsdb(t, "generate", "--model", "../../testdata/hf/llama", "--ids", "1,2,3", "-n", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	line := strings.TrimSuffix(out, "\n")
	if !regexp.MustCompile(`^[0-9]+,[0-9]+,[0-9]+$`).MatchString(line) {
		t.Fatalf("generate printed %q, want 3 comma-separated ids", out)
	}
	if _, err := parseIDs(line); err != nil {
		t.Errorf("--ids refuses what generate printed: %v", err)
	}
}

// TestGeneratePartialLoadWarns: `hsdb generate --load-layers 1-4` on
// stories260K (layers 0-4) generated from a model missing layer 0, with no
// word, while the debugger notes it at every run and capture refuses it;
// generate now warns on stderr (and in --json "notes"), and a load of
// every layer (0-4) does not.
func TestGeneratePartialLoadWarns(t *testing.T) {
	want := "only decoder layers 1-4 of 0-4 are loaded (--load-layers 1-4)"
	_, errs, code := runHsdb(t, "generate", "--load-layers", "1-4", "-n", "4")
	if code != 0 || !strings.Contains(errs, "hsdb generate: warning: "+want) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	out, _, code := runHsdb(t, "generate", "--load-layers", "1-4", "-n", "4", "--json")
	if code != 0 || !strings.Contains(out, `"notes":["`+want) {
		t.Errorf("--json: exit %d, %s", code, out)
	}
	if _, errs, code = runHsdb(t, "generate", "--load-layers", "0-4", "-n", "4"); code != 0 || errs != "" {
		t.Errorf("every layer loaded: exit %d, stderr %q", code, errs)
	}
}
