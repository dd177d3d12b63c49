package repl

import (
	"strings"
	"testing"
)

// TestDeleteEditsSaysWhat: `delete edits` reports as `delete` does (help
// delete: "it says which it deleted and lists those left"): deleting three
// edits says which, not "No edits." as if there had been none, and
// deleting some lists those left.
func TestDeleteEditsSaysWhat(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.Exec("run")
	f.AssertExec("set var stream[0, :] = * 2", "edit 1:")
	f.AssertExec("set var stream[1, :] = 0", "edit 2:")
	f.AssertExec("set var stream[2, :] = + 1", "edit 3:")
	out := f.AssertExec("delete edits 2", "deleted edit 2; left:\n")
	if !strings.Contains(out, " 1  model.layers.2") || !strings.Contains(out, " 3  model.layers.2") || strings.Contains(out, " 2  model.layers.2") {
		t.Errorf("delete edits 2:\n%s\nwant edits 1 and 3 listed as left, not 2", out)
	}
	f.AssertExec("delete edits", "deleted edit 1, edit 3; no edits left")
	f.AssertExec("delete edits", "deleted nothing; no edits left")
}
