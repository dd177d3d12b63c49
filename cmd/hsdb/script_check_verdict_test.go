package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptCheckVerdictFails: a REPL `check` whose verdict is "problems
// found" fails the command as `hsdb check` exits 1, so `hsdb -x` stops
// there and exits 1 (the script's next line never runs); it exited 0.
// shifted_by_one.pt (rows shifted by one: the fixture generator's
// deliberately broken capture) fails; good_speculators.pt passes and the
// script goes on. The CLI check of the same file exits 1: they agree.
func TestScriptCheckVerdictFails(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		file      string
		code      int
		afterRuns bool
	}{
		{"../../testdata/captures/shifted_by_one.pt", 1, false},
		{"../../testdata/captures/good_speculators.pt", 0, true},
	} {
		script := filepath.Join(dir, filepath.Base(c.file)+".hsdb")
		if err := writeFile(script, "check "+c.file+" --layers 0,1,2\necho after-check\n"); err != nil {
			t.Fatal(err)
		}
		out, errs, code := runHsdb(t, "--model", "../../testdata/hf/llama", "-x", script)
		if code != c.code || strings.Contains(out, "after-check") != c.afterRuns {
			t.Errorf("-x check %s: exit %d (want %d), next line ran %v (want %v)\n%s%s", c.file, code, c.code, !c.afterRuns, c.afterRuns, out, errs)
		}
		if c.code != 0 && !strings.Contains(out+errs, "the verdict is not valid") {
			t.Errorf("-x check %s: output %q: want the failed verdict", c.file, out+errs)
		}
		_, _, cli := runHsdb(t, "check", c.file, "--model", "../../testdata/hf/llama", "--layers", "0,1,2")
		if cli != c.code {
			t.Errorf("hsdb check %s: exit %d, the REPL's check %d", c.file, cli, c.code)
		}
	}
}
