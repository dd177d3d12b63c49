package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestLayerCountOrder: `check --layers` against a file whose layers are
// keyed by number (hsdb's hidden_states.{layer}) compares sets: the keys
// carry the layers and a safetensors header has no order, so --layers
// 2,0 for a file holding hidden_states.0 and .2 is the same request as
// 0,2 (it failed "labelled layers 0,2, requested 2,0"). A file whose
// entries are in a trainer's order (speculators' [seq, n_ids, hidden],
// concatenated as hidden_states[:, :-1].flatten(1)) still fails for
// another order, and the detail now says it is the order, naming the
// file's. Labels by hand: layer_ids 2,1,3 = hsdb layers 1,0,2. A keyed
// file whose metadata records the order (hsdb's "layers") is held to it
// (TestKeyedLayerOrder); these keys have none.
func TestLayerCountOrder(t *testing.T) {
	dir := t.TempDir()
	ids := tensor.FromI64([]int64{1, 2, 3, 4}, 4)
	row := func(v float32) *tensor.Tensor {
		x := make([]float32, 4*8)
		for i := range x {
			x[i] = v + float32(i)
		}
		return tensor.FromF32(x, 4, 8)
	}
	keyed := filepath.Join(dir, "keyed.safetensors")
	if err := safetensors.WriteFile(keyed, []safetensors.Named{{Name: "input_ids", T: ids}, {Name: "hidden_states.0", T: row(1)}, {Name: "hidden_states.2", T: row(100)}}, nil); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 4*3*8)
	for i := range x {
		x[i] = float32(i%97) - 40
	}
	spec := filepath.Join(dir, "hs_0.safetensors")
	if err := safetensors.WriteFile(spec, []safetensors.Named{{Name: "token_ids", T: ids}, {Name: "hidden_states", T: tensor.FromF32(x, 4, 3, 8)}}, map[string]string{"convention": "speculators", "layer_ids": "2,1,3"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		layers []int
		status capture.Status
		want   string
	}{
		{keyed, []int{2, 0}, capture.Pass, "2 layers"},
		{keyed, []int{0, 2}, capture.Pass, "2 layers"},
		{keyed, []int{0, 1}, capture.Fail, "labelled layers 0,2, requested 0,1"},
		{spec, []int{1, 0, 2}, capture.Pass, "3 layers"},
		{spec, []int{0, 1, 2}, capture.Fail, "the same layers in another order: the file holds 1,0,2 in this order"},
	} {
		r := CheckFile(c.path, CheckOptions{Layers: c.layers})
		x, ok := r.Rule(capture.RuleLayerCount)
		if !ok || x.Status != c.status || !strings.Contains(x.Detail, c.want) {
			t.Errorf("%s --layers %v: %+v, want %v %q", filepath.Base(c.path), c.layers, x, c.status, c.want)
		}
	}
}
