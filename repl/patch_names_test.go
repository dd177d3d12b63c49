package repl

import "testing"

// TestPatchEmptySiteOrTensor: `patch .stream from DUMP` (a site left out)
// and `patch layers.2. from DUMP` (a tensor left out) are refused naming
// the two forms, before the dump is looked at; ".stream" patched the
// stopped site's stream, as if no dot had been typed, where the user meant
// to arm a patch of some site.
func TestPatchEmptySiteOrTensor(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.Exec("run")
	for _, name := range []string{".stream", "layers.2.", "."} {
		f.AssertError("patch "+name+" from /nonexistent-dump", "want TENSOR (at a stop) or SITE.TENSOR (armed for the next run)")
	}
}
