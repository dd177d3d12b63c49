package repl

import (
	"strings"
	"testing"
)

// TestBacktraceCount: gdb's `bt N` (the innermost N frames) and `bt -N`
// (the outermost N) were refused ("bt takes no arguments"). By hand, at
// model.layers.3.mlp.gate_up_proj the chain is #0 gate_up_proj, #1
// layers.3.mlp, #2 layers.3, #3 model, #4 the root: `bt 2` shows #0 and
// #1 and says more frames follow, `bt -2` shows #3 and #4, `bt 9` all
// five; `bt full` is bt (every frame already shows its tensors' shapes).
func TestBacktraceCount(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.3.mlp.gate_up_proj")
	f.AssertExec("run", "Stopped at model.layers.3.mlp.gate_up_proj ")
	levels := func(out string) string {
		var ls []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "#") {
				ls = append(ls, strings.Fields(l)[0])
			}
		}
		return strings.Join(ls, " ")
	}
	for _, c := range []struct{ cmd, want string }{
		{"bt 2", "#0 #1"}, {"bt -2", "#3 #4"}, {"bt 9", "#0 #1 #2 #3 #4"}, {"bt full", "#0 #1 #2 #3 #4"}, {"bt", "#0 #1 #2 #3 #4"},
	} {
		out := f.Exec(c.cmd)
		if got := levels(out); got != c.want {
			t.Errorf("%s: frames %q, want %q:\n%s", c.cmd, got, c.want, out)
		}
	}
	f.AssertExec("bt 2", "(More stack frames follow...)")
	f.AssertError("bt 0", "bt: want N or -N")
	f.AssertError("bt x", "bt: want N or -N")
}
