package repl

import (
	"strings"
	"testing"
)

// TestIgnoreCommand: gdb's `ignore N COUNT` (pass breakpoint N COUNT
// times before stopping) was an unknown command. By hand: `break
// layers.*` crosses layers 0..4 in order, so after `ignore 1 2` the run
// passes layers 0 and 1 and stops at layer 2 with 3 hits counted (gdb
// counts ignored crossings); info break shows what is left to ignore
// until it is used up; `ignore 1 0` stops at the next crossing.
func TestIgnoreCommand(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.*")
	f.AssertExec("ignore 1 2", "Will ignore next 2 crossings of breakpoint 1.")
	f.AssertExec("info break", "ignore next 2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	out := f.AssertExec("info break", "layers.*")
	if lineAfter(out, "id ") == "" || !containsField(lineAfter(out, "id "), "3") {
		t.Errorf("hits after two ignored crossings and a stop:\n%s", out)
	}
	f.AssertExec("ignore 1 1", "Will ignore next crossing of breakpoint 1.")
	f.AssertExec("continue", "Stopped at model.layers.4 ")
	f.AssertExec("ignore 1 0", "Will stop next time breakpoint 1 is reached.")
	f.AssertError("ignore 1", "ignore: want N COUNT")
	f.AssertError("ignore 7 1", "no breakpoint number 7")
	f.AssertError("ignore 1 -1", "COUNT")
}

func containsField(line, f string) bool {
	for _, x := range strings.Fields(line) {
		if x == f {
			return true
		}
	}
	return false
}
