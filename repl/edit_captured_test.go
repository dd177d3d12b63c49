package repl

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestEditAtStopIsCaptured: `set var stream[1, 2] = 7` at a stop at
// layers.1 with `capture layers 1,2` dumped hidden_states.1 with the value
// from before the edit (the capture had recorded the site when the pass
// reached it, before the stop), while hidden_states.2 was computed from
// the edited stream and the same edit replayed with --persist was
// captured: the file disagreed with the pass it claims. The dump now holds
// the edited value, 7 exactly in f32. At --tp 2 an edit of rank 1's copy
// alone makes layer 1's copies differ, and the dump's replica check names
// hidden_states.1 (before: the first layer whose copies it saw differ,
// hidden_states.2).
func TestEditAtStopIsCaptured(t *testing.T) {
	f := newFake(t, 1)
	dir := filepath.Join(t.TempDir(), "d")
	f.Exec(batchCmd)
	f.Exec("capture layers 1,2")
	f.Exec("break layers.1")
	f.AssertExec("run", "Stopped at model.layers.1 ")
	f.AssertExec("set var stream[1, 2] = 7", "edit 1: ")
	f.Exec("delete")
	f.AssertExec("continue", "Finished: prefill")
	f.AssertExec("dump "+dir, "dumped 2 sequences")
	x := firstDumpTensor(t, dir, "hidden_states.1")
	if v := x.ToF32()[1*x.Shape[1]+2]; v != 7 {
		t.Errorf("hidden_states.1[1, 2] = %v in the dump, want the edited 7", v)
	}

	g := newFake(t, 2)
	g.Exec(batchCmd)
	g.Exec("capture layers 1,2")
	g.Exec("break layers.1")
	g.AssertExec("run", "Stopped at model.layers.1 ")
	g.AssertExec("set var stream = stream + 1 --rank 1", "edit 1: ")
	g.Exec("delete")
	g.AssertExec("continue", "Finished: prefill")
	err := g.Term.Exec("dump " + filepath.Join(t.TempDir(), "d"))
	if err == nil || !strings.Contains(err.Error(), "replicas equal: hidden_states.1") {
		t.Errorf("dump after editing rank 1's copy at layer 1: %v; want the replica check to name hidden_states.1", err)
	}
}

// firstDumpTensor reads tensor key of the first sequence file of the dump
// at dir, as its manifest lists the files. The file stays open (its
// tensors alias the mapping) until the test ends.
func firstDumpTensor(t *testing.T, dir, key string) *tensor.Tensor {
	t.Helper()
	m, err := capture.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := safetensors.Open(filepath.Join(dir, m.Sequences[0].File))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Close() })
	x, err := sf.Tensor(key)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
