package repl

import (
	"strings"
	"testing"
)

// TestSetVarOneNumber: the value of `set var` is one number, with its
// operator in front or written apart. Its words were joined, so
// `set var stream[0, 0] = 1 1` wrote 11 and `* 2 3` scaled by 23, without
// a word; now each is refused naming the value as typed, and no edit is
// made (info edits lists none). The accepted forms still make their edit.
func TestSetVarOneNumber(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.1")
	f.AssertExec("run", "Stopped at model.layers.1 ")
	for _, c := range []struct{ line, value string }{
		{"set var stream[0, 0] = 1 1", "1 1"},
		{"set var stream[0, 0] = * 2 3", "* 2 3"},
		{"set var stream = stream + 1 2", "+ 1 2"},
		{"set var stream[0, 0] = = 1", "= 1"},
	} {
		err := f.Term.Exec(c.line)
		want := `set var: value "` + c.value + `": want one number, or an operator and one number (* 0.5, + 1)`
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", c.line, err, want)
		}
	}
	if out := f.AssertExec("info edits", ""); strings.Contains(out, "edit 1") {
		t.Fatalf("a refused value made an edit:\n%s", out)
	}
	f.AssertExec("set var stream[0, 0] = 11", "stream[0:1, 0:1] = 11 ")
	f.AssertExec("set var stream[0, 0] = * -2", "stream[0:1, 0:1] * -2 ")
	f.AssertExec("set var stream = stream + 1", "stream[0:10, 0:64] + 1 ")
}
