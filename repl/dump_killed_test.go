package repl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDumpAfterKillSaysWhy: `kill` at layers.1 aborts the pass before the
// captured layer 2 runs; `dump` then said only "nothing was captured for
// hidden_states.2 (did the forward pass reach its site?)", a question,
// although help kill promises that dump names what the killed pass never
// reached. It now says that `kill` aborted the pass at the stop and how
// to go on (`run` for a prefill, `gen 1` for a decode step, which runs the
// killed step again); after that the same dump is written.
func TestDumpAfterKillSaysWhy(t *testing.T) {
	f := newHFFake(t, 2)
	f.Exec("input ids 0,5,17,33,2,9,41 ; ids 0,12,7")
	f.Exec("capture layers 0,2")
	f.Exec("break layers.1")
	f.AssertExec("run", "model.layers.1")
	f.AssertExec("kill", "aborted")
	dir := filepath.Join(t.TempDir(), "d")
	f.AssertError("dump "+dir, "nothing was captured for hidden_states.2")
	f.AssertError("dump "+dir, "`kill` aborted the last pass at model.layers.1 (step 0), before it reached it: `run` to the end")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused dump left %s: %v", dir, err)
	}
	f.Exec("disable")
	f.AssertExec("run", "Finished: prefill")
	f.AssertExec("dump "+dir, "dumped 2 sequences (7, 3 tokens)")

	// A decode step killed at layers.1: layer 2 lacks the step's row.
	f.Exec("enable")
	f.AssertExec("gen 1", "step 1 (decode)")
	f.AssertExec("kill", "aborted")
	dir2 := filepath.Join(t.TempDir(), "d2")
	f.AssertError("dump "+dir2, "hidden_states.2 has 7 rows for 8 tokens")
	f.AssertError("dump "+dir2, "`kill` aborted the last pass at model.layers.1 (step 1), before it reached it: `gen 1` to run that decode step again")
	f.Exec("disable")
	f.AssertExec("gen 1", "Finished: 1 decode step")
	f.AssertExec("dump "+dir2, "dumped 2 sequences (8, 4 tokens)")
}
