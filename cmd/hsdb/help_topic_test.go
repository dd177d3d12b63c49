package main

import (
	"strings"
	"testing"
)

// TestHelpSubcommand: `hsdb help plan` printed the general help, the word
// plan ignored, and `hsdb help plna` the same with exit 0; now help CMD is
// CMD --help (its usage line and flags, exit 0, as git help CMD), and an
// unknown name is refused (exit 2) with the nearest subcommand.
func TestHelpSubcommand(t *testing.T) {
	out, errs, code := runHsdb(t, "help", "plan")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: hsdb plan ") || !strings.Contains(out, "--seqs int") {
		t.Errorf("help plan: exit %d, stdout %.200q, stderr %q; want plan's usage and flags", code, out, errs)
	}
	out, errs, code = runHsdb(t, "help", "plna")
	if code != 2 || out != "" || errs != "hsdb help: unknown subcommand \"plna\": did you mean hsdb plan? (`hsdb help` lists them)\n" {
		t.Errorf("help plna: exit %d, stdout %.200q, stderr %q", code, out, errs)
	}
	if out, _, code := runHsdb(t, "help"); code != 0 || !strings.Contains(out, "subcommands (hsdb CMD --help") {
		t.Errorf("help: exit %d, %.200q", code, out)
	}
}
