package repl

import "testing"

// TestInfoGdbNames: gdb's `info watchpoints` was refused although `info
// watch` listed the watches, and gdb's `info stack` (its backtrace) was
// unknown. Both work: watchpoints lists the breakpoints and watches as
// info break does, stack prints bt.
func TestInfoGdbNames(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("watch stream absmax > 5")
	f.AssertExec("info watchpoints", "watch", "absmax > 5")
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at ")
	f.AssertExec("info stack", "#0  model.layers.", "#1  model  ")
}
