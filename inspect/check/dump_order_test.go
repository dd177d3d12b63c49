package check

import (
	"strings"
	"testing"

	"hsdb/engine/modelpath"
)

// TestDumpLayersCapturedOutOfOrder: a dump of `capture layers 1,0` holds
// hidden_states.1 and hidden_states.0 (keys = layers) with metadata
// layers "1,0" (the capture's order). check read the keys 0,1 as list
// positions and labelled them from the metadata in order, so
// hidden_states.0 was "labelled layer 1" and the dump of the model itself
// failed with an invented off-by-one diagnosis. Keys that are the same
// numbers as the metadata's layers are the layers: the dump is valid.
func TestDumpLayersCapturedOutOfOrder(t *testing.T) {
	e, dir := llamaDump(t, []int{1, 0})
	d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
	pr := CheckPath(dir, CheckOptions{Dims: d, Model: targetOf(e)})
	if pr.Failed() {
		t.Fatalf("check of the model's own dump:\n%s", strings.Join(pr.Lines(), "\n"))
	}
	for _, m := range pr.Files[0].Matches {
		if want := map[string]int{"hidden_states.0": 0, "hidden_states.1": 1}[m.Key]; m.Label != want {
			t.Errorf("%s labelled layer %d, want %d", m.Key, m.Label, want)
		}
	}
}
