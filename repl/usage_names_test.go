package repl

import (
	"strings"
	"testing"
)

// TestUsageErrorsNameTheCommand: a usage error names the command typed
// and only the flags it takes: `tbreak` is not `break`, and `diff` (no
// --no-model: it runs the model) does not offer --no-model.
func TestUsageErrorsNameTheCommand(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("tbreak", "tbreak: want SITE [if COND]")
	f.AssertError("tbreak layers.1 if", "tbreak: `if` needs a condition: tbreak layers.3 if nan")
	f.AssertError("b", "break: want SITE [if COND]")
	for _, line := range []string{"diff", "diff x --what"} {
		err := f.Term.Exec(line)
		if err == nil || !strings.HasPrefix(err.Error(), "diff: ") || strings.Contains(err.Error(), "--no-model") {
			t.Errorf("%s: %v; want a diff usage error without --no-model", line, err)
		}
	}
	f.AssertError("check", "check: want PATH [--layers 2,30] [--tp N] [--seq-lens 512,259] [--no-model]")
}
