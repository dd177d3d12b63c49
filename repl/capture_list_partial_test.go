package repl

import (
	"strings"
	"testing"
)

// TestCaptureListPartial: after a pass ended at a stop (kill, or a run
// interrupted), `capture list` said "captured: seq 0: 6 tokens, seq 1: 4
// tokens" although layer 3, after the stop at layer 2, recorded nothing;
// only `dump` then said so. The list names each key that holds fewer rows
// than its sequence's tokens. By hand: batchCmd's sequences are 6 and 4
// tokens; layer 1 ran for all of them, layer 3 for none.
func TestCaptureListPartial(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("capture layers 1,3")
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	f.Exec("kill")
	out := f.AssertExec("capture list", "seq 0: 6 tokens (hidden_states.3: 0 of 6 rows)", "seq 1: 4 tokens (hidden_states.3: 0 of 4 rows)")
	if strings.Contains(out, "hidden_states.1:") {
		t.Errorf("layer 1, complete, named as missing rows:\n%s", out)
	}
	f.Exec("delete")
	f.Exec("run")
	if out := f.Exec("capture list"); strings.Contains(out, " rows)") {
		t.Errorf("a complete run still names missing rows:\n%s", out)
	}
}
