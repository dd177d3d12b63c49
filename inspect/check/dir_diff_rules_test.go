package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/modelpath"
)

// TestDirDiffNamesDirectoryRules: a dump of three sequences with one of
// its listed files deleted is a problem of the directory (the files rule
// fails; the two files left are each valid). `hsdb diff DIR` printed only
// each file's "verdict: valid" and exited 1 with no word of why, and
// check's full listing ended on "2 files: 2 valid, 0 invalid, 0
// unreadable"; both now print the directory's failing rule and end on the
// path's verdict, "problems found" (by hand: a listed file is missing).
func TestDirDiffNamesDirectoryRules(t *testing.T) {
	e, dir := llamaDumpOf(t, [][]int32{{1, 5, 7, 9}, {1, 8, 9}, {1, 2, 3, 4, 5}}, []int{0, 1})
	if err := os.Remove(filepath.Join(dir, "seq_000001.safetensors")); err != nil {
		t.Fatal(err)
	}
	d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
	pr := CheckPath(dir, CheckOptions{Dims: d, Model: targetOf(e)})
	if v := pr.Verdict(); v != VerdictProblems {
		t.Fatalf("verdict %s, want problems found", v)
	}
	for _, diff := range []bool{false, true} {
		rep, err := pr.Report(diff, "")
		if err != nil {
			t.Fatal(err)
		}
		out := strings.Join(rep.Lines, "\n")
		if !strings.Contains(out, "FAIL  files") || !strings.Contains(out, "listed but missing: seq_000001.safetensors") {
			t.Errorf("diff=%v: the failing files rule is not printed:\n%s", diff, out)
		}
		if last := rep.Lines[len(rep.Lines)-1]; last != "  verdict: problems found" {
			t.Errorf("diff=%v: last line %q, want the path's verdict \"  verdict: problems found\"\n%s", diff, last, out)
		}
		if rep.Exit != 1 {
			t.Errorf("diff=%v: exit %d, want 1", diff, rep.Exit)
		}
	}
}
