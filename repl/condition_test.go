package repl

import "testing"

// TestConditionCommand: gdb's `condition N COND` was an unknown command.
// It replaces breakpoint N's condition and lists the breakpoints;
// `condition N` makes it unconditional. By hand: stories260K's layer 1
// stream never reaches |1e9|, so the pass runs to the end, and without
// the condition it stops at layer 1.
func TestConditionCommand(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1")
	f.AssertExec("condition 1 absmax(stream) > 1e9", "absmax(stream) > 1e9")
	f.AssertExec("run", "Finished")
	f.AssertExec("condition 1", "layers.1")
	f.AssertExec("run", "Stopped at model.layers.1 ")
	f.AssertError("condition", "condition: want N [COND]")
	f.AssertError("condition x nan", `"x" is not a breakpoint number`)
	f.AssertError("condition 9 nan", "no breakpoint number 9")
	f.AssertError("condition 1 rank == 5", "rank")
}
