package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestConvertHelp: `hsdb --help` says "hsdb CMD --help lists a command's
// flags", but `hsdb convert --help` exited 2 with a one-line usage and no
// flags, and `hsdb convert llama2c --help` said "the checkpoint IN.bin
// comes first". Both now print the usage (with the second --tokenizer the
// top-level help shows) and convert's three flags, and exit 0.
func TestConvertHelp(t *testing.T) {
	for _, args := range [][]string{{"convert", "--help"}, {"convert", "-h"}, {"convert", "llama2c", "--help"}} {
		var out, errOut bytes.Buffer
		if code := hsdbMain(args, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Errorf("%v: exit %d, want 0; stderr %q", args, code, errOut.String())
			continue
		}
		got := out.String()
		for _, w := range []string{"usage: hsdb convert llama2c IN.bin --tokenizer tok.bin [--tokenizer tok.model] --out DIR [--force]", "  --force ", "  --out string ", "  --tokenizer file "} {
			if !strings.Contains(got, w) {
				t.Errorf("%v: %q missing from:\n%s", args, w, got)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"convert"}, stdio{Out: &out, Err: &errOut}); code != 2 {
		t.Errorf("convert alone: exit %d, want 2 (a usage error)", code)
	}
}

// TestFlagHelpAligned: a flag whose "--name TYPE" is longer than 22
// characters ("--worker-timeout duration", 25) pushed its meaning out of
// the column every other flag's meaning starts in. In `hsdb capture
// --help` every meaning now starts at column 2 + 25 + 1 = 28 (the longest
// "--name TYPE" there, counted by hand, plus the indent and one space).
func TestFlagHelpAligned(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"capture", "--help"}, stdio{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	n := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(l, "  -") {
			continue
		}
		n++
		if len(l) < 29 || l[27] != ' ' || l[28] == ' ' {
			t.Errorf("meaning not at column 28: %q", l)
		}
	}
	if n < 20 {
		t.Fatalf("%d flag lines in:\n%s", n, out.String())
	}
}

// TestDiffHelpNoNoModel: `hsdb diff --help` listed --no-model, which diff
// refuses ("diff compares the capture with hsdb's own forward pass, which
// needs the model"); check's help keeps it, and diff still names it when
// given.
func TestDiffHelpNoNoModel(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want bool
	}{{"diff", false}, {"check", true}} {
		var out, errOut bytes.Buffer
		if code := hsdbMain([]string{c.cmd, "--help"}, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Fatalf("%s --help: exit %d", c.cmd, code)
		}
		if got := strings.Contains(out.String(), "--no-model"); got != c.want {
			t.Errorf("%s --help lists --no-model: %v, want %v\n%s", c.cmd, got, c.want, out.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"diff", "x.pt", "--model", "../../testdata/hf/llama", "--no-model"}, stdio{Out: &out, Err: &errOut}); code != 2 || !strings.Contains(errOut.String(), "--no-model: diff compares the capture with hsdb's own forward pass") {
		t.Errorf("diff --no-model: exit %d, stderr %q", code, errOut.String())
	}
}
