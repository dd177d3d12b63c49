package repl

import (
	"strings"
	"testing"
)

// TestInfoCaptures: design.md's `info captures` (gdb's `info` for what a
// session holds) was refused with "want one of model ..., not
// \"captures\"", a list that did not say where captures are listed, and
// that list left out `info stack`, which works. `info captures` now shows
// what `capture list` shows, and the list names stack and captures.
func TestInfoCaptures(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("capture layers 1,3")
	f.AssertExec("info captures", "hidden_states.3", "nothing captured yet")
	f.Exec("run")
	out := f.AssertExec("info captures", "hidden_states.1", "model.layers.3", "captured: seq 0: 6 tokens, seq 1: 4 tokens")
	if list := f.AssertExec("capture list"); list != out {
		t.Errorf("info captures:\n%s\ncapture list:\n%s", out, list)
	}
	err := f.Term.Exec("info nosuch")
	if err == nil || !strings.Contains(err.Error(), "frame, stack, batch") || !strings.Contains(err.Error(), "inject, captures") {
		t.Errorf("info nosuch: %v, want the list to name stack and captures", err)
	}
}
