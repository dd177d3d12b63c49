package main

import (
	"strings"
	"testing"
)

// TestTypoOfHelpAndVersion: a user trial found `hsdb hlep` and `hsdb
// --versoin` answered without a guess, while `plna`, `captur` and `chek`
// got one: help and version were not among the names a mistyped first
// argument or flag is matched against. They are now, as is --help in
// every subcommand (version only at the top: `hsdb plan --versoin` gets
// no guess), and convert's one format llama2c; `hsdb help versoin` is
// offered version, which `hsdb help version` now explains (it was "unknown
// subcommand").
func TestTypoOfHelpAndVersion(t *testing.T) {
	for _, c := range []struct {
		args    []string
		wantOut string
		wantErr string
	}{
		{[]string{"hlep"}, "", "hsdb: unexpected \"hlep\": did you mean hsdb help? (`hsdb help` lists the subcommands)\n"},
		{[]string{"versoin"}, "", "hsdb: unexpected \"versoin\": did you mean hsdb version? (`hsdb help` lists the subcommands)\n"},
		{[]string{"plna"}, "", "hsdb: unexpected \"plna\": did you mean hsdb plan? (`hsdb help` lists the subcommands)\n"},
		{[]string{"--versoin"}, "", "hsdb: unknown flag --versoin: did you mean --version?\nhsdb --help lists the flags\n"},
		{[]string{"-verison"}, "", "hsdb: unknown flag --verison: did you mean --version?\nhsdb --help lists the flags\n"},
		{[]string{"--hlep"}, "", "hsdb: unknown flag --hlep: did you mean --help?\nhsdb --help lists the flags\n"},
		{[]string{"plan", "--hepl"}, "", "hsdb plan: unknown flag --hepl: did you mean --help?\nhsdb plan --help lists the flags\n"},
		{[]string{"check", "x.pt", "--hlep"}, "", "hsdb check: unknown flag --hlep: did you mean --help?\nhsdb check --help lists the flags\n"},
		{[]string{"plan", "--versoin"}, "", "hsdb plan: unknown flag --versoin\nhsdb plan --help lists the flags\n"},
		{[]string{"convert", "lama2c"}, "", "hsdb convert: unknown format \"lama2c\": did you mean hsdb convert llama2c?\n" +
			"hsdb convert: usage: hsdb convert llama2c IN.bin --tokenizer tok.bin [--tokenizer tok.model] --out DIR [--force]\n"},
		{[]string{"help", "versoin"}, "", "hsdb help: unknown subcommand \"versoin\": did you mean hsdb version? (`hsdb help` lists them)\n"},
		{[]string{"--json", "hlep"}, "{\"command\":\"hsdb\",\"error\":\"unexpected \\\"hlep\\\": did you mean hsdb help? (`hsdb help` lists the subcommands)\",\"exit\":2}\n", ""},
	} {
		out, errs, code := runHsdb(t, c.args...)
		if code != 2 || out != c.wantOut || errs != c.wantErr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q\nwant exit 2, stdout %q, stderr %q", c.args, code, out, errs, c.wantOut, c.wantErr)
		}
	}
}

// TestHelpVersion: `hsdb help version` explains `hsdb --version` (exit 0),
// as `hsdb help plan` explains plan; it was refused as an unknown
// subcommand though `hsdb version` runs.
func TestHelpVersion(t *testing.T) {
	out, errs, code := runHsdb(t, "help", "version")
	want := "usage: hsdb --version (or hsdb version)\n\nprint the version and the commit hsdb was built from\n"
	if code != 0 || out != want || errs != "" {
		t.Errorf("help version: exit %d, stdout %q, stderr %q; want exit 0 and %q", code, out, errs, want)
	}
}

// TestVersionAfterFlags: the did-you-mean offers --version and `hsdb
// help` wherever a debugger flag or word is mistyped (`hsdb --model x
// --versoin`, `hsdb --json helpp`), so they work there too: --version
// after other flags prints the version line (the model is not looked at),
// `help` or `version` as the one word after flags does what it does first.
func TestVersionAfterFlags(t *testing.T) {
	version, _, _ := runHsdb(t, "--version")
	if !strings.HasPrefix(version, "hsdb ") || !strings.HasSuffix(version, "\n") {
		t.Fatalf("hsdb --version printed %q", version)
	}
	usage, _, _ := runHsdb(t, "help")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "nowhere", "--version"}, version},
		{[]string{"--json", "--version"}, version},
		{[]string{"--tp", "2", "version"}, version},
		{[]string{"--json", "help"}, usage},
	} {
		out, errs, code := runHsdb(t, c.args...)
		if code != 0 || out != c.want || errs != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 0, stdout %q", c.args, code, out, errs, c.want)
		}
	}
}
