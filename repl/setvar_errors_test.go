package repl

import (
	"strings"
	"testing"
)

// TestSetVarErrorsPrefixedOnce: set var's errors from the session (a
// partial sum edited on every rank; division by 0) read "set var: ..."
// once, not "set var: set var stream: ...".
func TestSetVarErrorsPrefixedOnce(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1.mlp.down_proj")
	f.AssertExec("run", "Stopped at model.layers.1.mlp.down_proj ")
	for _, line := range []string{"set var output[0, 0] = / 0", "set var partial[0, 0] = 1"} {
		err := f.Term.Exec(line)
		if err == nil || strings.Count(err.Error(), "set var") != 1 {
			t.Errorf("%s: %v; want one error naming set var once", line, err)
		}
	}
}
