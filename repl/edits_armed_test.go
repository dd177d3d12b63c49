package repl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestArmedEditRows: an armed patch (patch SITE.TENSOR from DUMP, for the
// next run) was listed with rows 0:0 and cols 0:0, an empty range, as if
// it would write nothing; its rows and columns are known only when it is
// applied. info edits shows "-" for them until then, and the ranges it
// wrote after the run (10 tokens of batchCmd, 64 columns of stories260K).
func TestArmedEditRows(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("capture layers 2")
	f.Exec("run")
	dir := filepath.Join(t.TempDir(), "ref")
	f.Exec("dump " + dir)
	f.Exec("patch layers.2.stream from " + dir)
	out := f.Exec("info edits")
	if strings.Contains(out, "0:0") {
		t.Errorf("armed edit listed with an empty range:\n%s", out)
	}
	row := lineAfter(out, "id ")
	if fs := strings.Fields(row); len(fs) < 6 || fs[4] != "-" || fs[5] != "-" {
		t.Errorf("armed edit's rows and cols %q, want - and -", row)
	}
	f.Exec("run")
	if fs := strings.Fields(lineAfter(f.Exec("info edits"), "id ")); len(fs) < 6 || fs[4] != "0:10" || fs[5] != "0:64" {
		t.Errorf("applied edit's rows and cols %v, want 0:10 and 0:64", fs)
	}
}
