package repl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpReplicaUnits: a dump refused for copies that differ said
// "rank 0's copy differs from the other 3 ranks', which agree (by
// 0.161)" while `print` at the same layer showed "|Δ| vs rank0 1.118"
// for the same copies: two numbers, no unit, so the user could not tell
// whether the dump and print disagreed. The refusal now says its number
// is relative to the tensor's largest |value| and that print's is the
// elementwise max |Δ|. (perturb-rank 0.5 on rank 0 at layer 1, tp 4: rank
// 0 alone differs, as the injected fault makes it.)
func TestDumpReplicaUnits(t *testing.T) {
	f := newFake(t, 4)
	f.Exec(batchCmd)
	f.Exec("inject perturb-rank 0.5 at layers.1 --rank 0")
	f.Exec("capture layers 1")
	f.Exec("run")
	f.buf.Reset()
	err := f.Term.Exec("dump " + filepath.Join(t.TempDir(), "d"))
	if err == nil {
		t.Fatal("dump of diverged copies was written")
	}
	for _, w := range []string{"rank 0's copy differs from the other 3 ranks', which agree (by ", "relative to the tensor's largest |value|; `print` gives the elementwise max |Δ|"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("dump error lacks %q:\n%v", w, err)
		}
	}
}
