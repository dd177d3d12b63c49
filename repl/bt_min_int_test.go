package repl

import (
	"strconv"
	"testing"
)

// TestBacktraceMostNegativeCount: `bt -9223372036854775808` (the most
// negative int, whose negation is itself) shows every frame, as any -N
// beyond the depth does; it panicked slicing the frames
// ("internal error in bt: slice bounds out of range"). By hand, at
// model.layers.2 the chain is #0 layers.2, #1 model, #2 the root.
func TestBacktraceMostNegativeCount(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	for _, n := range []string{"-9223372036854775808", "-" + strconv.Itoa(1<<40), "-3"} {
		f.AssertExec("bt "+n, "#0  model.layers.2", "#1  model", "#2  (root)")
	}
}
