package repl

import (
	"testing"
)

// TestGenAfterCheckSaysWhy: `run`, `gen 1` and `check DUMP` (which runs
// forward passes of its own on the loaded model and replaces its
// sequences) left `gen` saying "no completed prefill to continue: `run`
// first", right after a prefill completed. It now names check and diff
// as what replaced the prefill; check --no-model runs no pass and leaves
// gen working, and a new `run` clears the note.
func TestGenAfterCheckSaysWhy(t *testing.T) {
	f, dir := dumpedFake(t)
	f.AssertExec("gen 1", "Finished: 1 decode step")
	f.AssertExec("check "+dir+" --no-model", "valid")
	f.AssertExec("gen 1", "Finished: 1 decode step")
	f.AssertExec("check "+dir, "valid")
	f.AssertError("gen 1", "the last `run`'s prefill is gone: `check` and `diff` ran forward passes of their own")
	f.AssertExec("run", "Finished: prefill")
	f.AssertExec("diff "+dir, "valid")
	f.AssertError("gen 2", "`run` again, then gen 2")
	f.AssertExec("run", "Finished: prefill")
	f.AssertExec("gen 1", "Finished: 1 decode step")
}
