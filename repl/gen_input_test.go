package repl

import (
	"strings"
	"testing"
)

// TestGenAfterNewInput: `gen N` after `input` changed the batch is refused
// naming both batches and saying to `run` first (help gen); before, it
// decoded the last run's sequences as if nothing had changed ("seq 0: 4
// tokens" for a batch whose only sequence has 2). Sizes by hand: the run's
// batch is one sequence of 3 tokens, the new one two of 4 and 2. After
// `run`, gen decodes the new batch: 4+1 and 2+1 tokens. Setting the same
// ids again is no change. Stopped in a pass, gen finishes the stopped
// pass's batch (input's note says it keeps it): 3+1 tokens; the gen after
// that is refused again.
func TestGenAfterNewInput(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("input ids 1,403,407")
	f.AssertExec("run", "Finished: prefill")
	f.AssertExec("input ids 1,403,407", "batch: 1 sequence, 3 tokens")
	f.AssertExec("gen 1", "Finished: 1 decode step", "seq 0: 4 tokens")

	f.Exec("input ids 1,400,281,350 ; ids 1,400")
	want := "gen 2: `input` has changed the batch since the last `run` (which prefilled 1 sequence, 3 tokens; now 2 sequences, 6 tokens): `run` the new batch first, then gen 2"
	if err := f.Term.Exec("gen 2"); err == nil || err.Error() != want {
		t.Fatalf("gen 2 after a new input: %v\nwant %s", err, want)
	}
	f.AssertExec("run", "Finished: prefill")
	out := f.AssertExec("gen 1", "Finished: 1 decode step", "seq 0: 5 tokens", "seq 1: 3 tokens")
	if strings.Contains(out, "seq 0: 4 tokens") {
		t.Fatalf("gen after run decoded the old batch:\n%s", out)
	}

	f.Exec("input ids 1,403,407")
	f.Exec("break layers.1")
	f.AssertExec("run", "Stopped at model.layers.1 ")
	f.AssertExec("input ids 7,8", "keeps its own batch")
	f.Exec("delete")
	f.AssertExec("gen 1", "Finished: prefill and 1 decode step", "seq 0: 4 tokens")
	want = "gen 1: `input` has changed the batch since the last `run` (which prefilled 1 sequence, 3 tokens; now 1 sequence, 2 tokens): `run` the new batch first, then gen 1"
	if err := f.Term.Exec("gen 1"); err == nil || err.Error() != want {
		t.Fatalf("gen 1 after the stopped pass ended: %v\nwant %s", err, want)
	}
}
