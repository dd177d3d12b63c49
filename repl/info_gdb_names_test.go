package repl

import (
	"strings"
	"testing"
)

// TestInfoGdbNames: gdb's `info watchpoints` was refused although `info
// watch` listed the watches, and gdb's `info stack` (its backtrace) was
// unknown. Both work: watchpoints lists the watches (as gdb's, see
// TestInfoWatchpointsListsWatchesOnly), stack prints bt.
func TestInfoGdbNames(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("watch stream absmax > 5")
	f.AssertExec("info watchpoints", "watch", "absmax > 5")
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at ")
	f.AssertExec("info stack", "#0  model.layers.", "#1  model  ")
}

// TestInfoWatchpointsListsWatchesOnly: gdb's `info watchpoints` lists the
// watchpoints alone; hsdb's listed every breakpoint too, as `info break`.
// It now lists watch 2 and not breakpoint 1 (and says when there is no
// watch), while `info break` still lists both.
func TestInfoWatchpointsListsWatchesOnly(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("break layers.1")
	out := f.AssertExec("info watchpoints", "no watches")
	if strings.Contains(out, "layers.1") {
		t.Fatalf("info watchpoints lists a breakpoint:\n%s", out)
	}
	f.Exec("watch stream absmax > 5")
	out = f.AssertExec("info watchpoints", " 2  watch", "absmax > 5")
	if strings.Contains(out, "layers.1") || strings.Contains(out, "break") {
		t.Fatalf("info watchpoints lists breakpoint 1:\n%s", out)
	}
	f.AssertExec("info break", " 1  break", "layers.1", " 2  watch", "absmax > 5")
}
