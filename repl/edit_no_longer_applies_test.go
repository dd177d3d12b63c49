package repl

import "testing"

// TestPersistentEditNoLongerAppliesSaysDelete: a persistent `set var`
// whose rows the next batch does not have fails the run naming the edit
// and how to forget it (`delete edits 1`); after that the run goes on.
// The message named the edit and the slice only, and the run failed the
// same way each time.
func TestPersistentEditNoLongerAppliesSaysDelete(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2")
	f.AssertExec("set var stream[8:10, 0:4] = 7 --persist", "persistent")
	f.AssertExec("input ids 1,403,407", "batch: 1 sequence, 3 tokens")
	f.AssertError("run", "edit 1 (model.layers.2 stream[8:10, 0:4] = 7 (step 0, every rank) persistent) no longer applies: stream: row slice selects nothing of size 3 (`delete edits 1` forgets it)")
	f.AssertExec("delete edits 1", "")
	f.AssertExec("run", "Stopped at model.layers.2")
}
