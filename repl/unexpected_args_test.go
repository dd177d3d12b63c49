package repl

import "testing"

// TestUnexpectedArgsNameUsage: words a data command does not take were
// refused as `hist: unexpected "-3"`, without saying what it takes; the
// refusal now names the command's usage line from the command table.
func TestUnexpectedArgsNameUsage(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	for _, c := range []struct{ line, want string }{
		{"hist stream -3", `hist: unexpected "-3" (usage: hist TENSOR [--rank R] [--seq S] [--tokens A:B])`},
		{"top stream 3 4", `top: unexpected "4" (usage: top TENSOR [K] [--rank R] [--seq S] [--tokens A:B])`},
		{"ranks stream x", `ranks: unexpected "x" (usage: ranks TENSOR [--seq S] [--tokens A:B])`},
		{"print stream x", `print: unexpected "x" (usage: print TENSOR[ROWS, COLS] [--rank R] [--seq S] [--tokens A:B])`},
		{"display stream x", `display: unexpected "x" (usage: display [TENSOR [flags]])`},
		{"lens 3 4", `lens: unexpected "4" (usage: lens [K])`},
		{"up 1 2", `up: unexpected "2" (usage: up [N])`},
		{"inject skip-allreduce 1 2", `inject: unexpected "2" (usage: inject FAULT [VALUE] [at SITE]`},
	} {
		f.AssertError(c.line, c.want)
	}
}
