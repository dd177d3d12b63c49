package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptMissingBeforeLoad: `hsdb --model DIR -x typo.hsdb` loaded the
// whole model (minutes for DeepSeek-V3) and only then failed, naming
// `source` ("source: open typo.hsdb: ..."), a command the user never
// typed. The script is looked at first: with a model that cannot load
// either, the error is the script's, naming -x; a directory is refused too.
// Both are usage errors (exit 2), as a bad flag (TestInputPathsExit2).
func TestScriptMissingBeforeLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.hsdb")
	_, errs, code := runHsdb(t, "--model", filepath.Join(dir, "no-model"), "-x", missing)
	if code != 2 || !strings.Contains(errs, "-x: stat "+missing+": no such file or directory") || strings.Contains(errs, "--model") {
		t.Errorf("exit %d, stderr %q; want 2 and the missing script named before any model load", code, errs)
	}
	_, errs, code = runHsdb(t, "-x", dir)
	if code != 2 || !strings.Contains(errs, "-x "+dir+": is a directory, not a script") {
		t.Errorf("-x DIR: exit %d, stderr %q", code, errs)
	}
}
