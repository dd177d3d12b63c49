package main

import (
	"strings"
	"testing"
)

// TestGenerateIDsReadBeforeLoad: a mistyped --ids is refused (exit 2) before
// the model loads, so the model path here, which does not exist, is never
// reached (it was: exit 1 "stat ...", the --ids mistake said only after a
// load that takes minutes on a large model); a `;` (capture's and the
// debugger's sequence separator) is explained: generate runs one sequence.
func TestGenerateIDsReadBeforeLoad(t *testing.T) {
	out, errs, code := runHsdb(t, "generate", "--model", t.TempDir()+"/missing", "--ids", "1,403;1,400")
	if code != 2 || out != "" || !strings.Contains(errs, `--ids: token id "403;1" is not an integer: generate runs one sequence`) || strings.Contains(errs, "missing") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 naming --ids and one sequence, not the model path", code, out, errs)
	}
	_, errs, code = runHsdb(t, "generate", "--model", t.TempDir()+"/missing", "--ids", "1,x")
	if code != 2 || !strings.Contains(errs, `--ids: token id "x" is not an integer`) || strings.Contains(errs, "one sequence") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the id alone", code, errs)
	}
}
