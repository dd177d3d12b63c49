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

// TestHelpDebuggerCommand: the debugger's commands (break, step, print,
// ...) are explained by `help COMMAND` at the (hsdb) prompt, but `hsdb help
// break` at the shell, the first thing a gdb user types, was refused as an
// unknown subcommand (exit 2). It now prints the debugger's help for it,
// saying it is typed at the prompt; an alias (p) gives its command's help;
// a name that is both (capture) stays the subcommand's flags.
func TestHelpDebuggerCommand(t *testing.T) {
	out, errs, code := runHsdb(t, "help", "break")
	for _, want := range []string{"break is a command of the debugger (type it at the (hsdb) prompt", "\nbreak SITE [if COND]\n", "Stop at every site matching SITE", "\naliases: b\n"} {
		if code != 0 || errs != "" || !strings.Contains(out, want) {
			t.Errorf("help break: exit %d, stdout %.300q, stderr %q; want %q", code, out, errs, want)
		}
	}
	if out, _, code := runHsdb(t, "help", "p"); code != 0 || !strings.Contains(out, "\nprint TENSOR[ROWS, COLS]") {
		t.Errorf("help p: exit %d, %.200q; want print's help", code, out)
	}
	if out, _, code := runHsdb(t, "help", "capture"); code != 0 || !strings.HasPrefix(out, "usage: hsdb capture ") {
		t.Errorf("help capture: exit %d, %.200q; want the subcommand's usage", code, out)
	}
	if out, _, code := runHsdb(t, "help"); code != 0 || !strings.Contains(out, "hsdb help COMMAND explains one here too") {
		t.Errorf("help: exit %d, %.200q; want the pointer to the debugger's commands", code, out)
	}
}

// TestHelpDebuggerCommandTypo: `hsdb help NAME` takes a debugger command,
// but a mistyped one (brek, stpe) was offered no name, the did-you-mean
// searching the subcommands alone; it now offers the nearest debugger
// command, as `help brek` at the prompt would (exit 2 still).
func TestHelpDebuggerCommandTypo(t *testing.T) {
	for typo, want := range map[string]string{"brek": "break", "contine": "continue", "captur": "capture"} {
		hint := "did you mean hsdb help " + want + "?"
		if want == "capture" { // a subcommand first
			hint = "did you mean hsdb capture?"
		}
		_, errs, code := runHsdb(t, "help", typo)
		if code != 2 || !strings.Contains(errs, hint) {
			t.Errorf("help %s: exit %d, stderr %q; want 2 and %q", typo, code, errs, hint)
		}
	}
}
