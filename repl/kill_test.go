package repl

import "testing"

// TestKillCommand: gdb's `kill` (end the program being debugged) was an
// unknown command, so a pass stopped at a breakpoint could be ended only
// by continuing through every later breakpoint or by `run` (which starts
// another). `kill` aborts the stopped pass: the session is no longer
// stopped (print says so), `check` may run its own passes again, and the
// breakpoints stay; with no pass stopped it says there is none, and words
// after it are refused (gdb's kill takes none either).
func TestKillCommand(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.*")
	f.AssertExec("run", "Stopped at model.layers.0 ")
	f.AssertError("kill 1", "kill takes no arguments")
	f.AssertExec("kill", "pass at model.layers.0", "aborted")
	f.AssertError("print stream", "not stopped")
	f.AssertExec("info break", "layers.*")
	f.AssertError("kill", "kill: no forward pass is stopped")
	f.AssertExec("run", "Stopped at model.layers.0 ")
}
