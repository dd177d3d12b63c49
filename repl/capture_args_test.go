package repl

import (
	"strings"
	"testing"
)

// TestCaptureClearListRefuseArguments: `capture clear` forgets every
// capture and `capture list` lists them all; given arguments (a user's
// `capture clear hidden_states.1`, meaning one) they refuse instead of
// silently clearing all of them.
func TestCaptureClearListRefuseArguments(t *testing.T) {
	f := newFake(t, 1)
	f.AssertExec("capture layers 1,2", "hidden_states.1", "hidden_states.2")
	f.AssertError("capture clear hidden_states.1", "capture clear takes no arguments")
	f.AssertError("capture list 1", "capture list takes no arguments")
	out := f.AssertExec("capture list", "hidden_states.1", "hidden_states.2")
	if strings.Contains(out, "no captures") {
		t.Fatalf("captures lost:\n%s", out)
	}
	f.AssertExec("capture clear", "no captures")
}
