package repl

import (
	"testing"
)

// TestNoArgumentCommandsRefuseArguments: the commands whose usage is their
// bare name (run, continue, step, next, finish, quit) refuse
// arguments, whichever alias is typed, instead of silently ignoring them:
// a gdb user's `next 3` or `continue 2` (a count there) must not quietly
// do one step or ignore nothing. The pass stays where it was.
func TestNoArgumentCommandsRefuseArguments(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	for line, want := range map[string]string{
		"step 3":     "step takes no arguments",
		"s 3":        "s takes no arguments",
		"next 3":     "next takes no arguments",
		"n 2":        "n takes no arguments",
		"continue 2": "continue takes no arguments",
		"c 2":        "c takes no arguments",
		"finish 1":   "finish takes no arguments",
		"where x":    "bt: want N or -N", // bt [N|-N] [full] reads its arguments as gdb does
		"quit 1":     "quit takes no arguments",
		"run x":      "run takes no arguments (set the batch with input)",
	} {
		f.AssertError(line, want)
	}
	f.AssertExec("frame", "model.layers.2 ")
}
