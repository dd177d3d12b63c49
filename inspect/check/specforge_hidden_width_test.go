package check

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestSpecForgeAuxSplitByModelHidden: a SpecForge sample whose
// aux_hidden_state is the right [len, 3·hidden] but whose hidden_state
// has a wrong width (here half of hidden_size, one rank's shard) was split
// by hidden_state's width: check, with the model's hidden_size known,
// blamed the good tensor ("aux_hidden_state holds 6 layers", six entries
// "has width 4, hidden_size = 8") and never the bad one. With hidden_size
// 8 known and aux_hidden_state exactly 3 × 8 wide, its three layers are
// its columns 0:8, 8:16 and 16:24 (built here by hand), and the shape rule
// names hidden_state alone.
func TestSpecForgeAuxSplitByModelHidden(t *testing.T) {
	const n, hidden, k = 4, 8, 3
	aux := make([]float32, n*k*hidden)
	for i := range aux {
		aux[i] = float32(i%11) - 5 + float32(i)/100
	}
	half := make([]float32, n*hidden/2)
	for i := range half {
		half[i] = float32(i%3) - 1
	}
	p := filepath.Join(t.TempDir(), "data_0.safetensors")
	if err := safetensors.WriteFile(p, []safetensors.Named{
		{Name: "input_ids", T: ids64(1, 5, 7, 9)},
		{Name: "loss_mask", T: ids64(0, 1, 1, 1)},
		{Name: "hidden_state", T: tensor.FromF32(half, 1, n, hidden/2)},
		{Name: "aux_hidden_state", T: tensor.FromF32(aux, 1, n, k*hidden)},
	}, nil); err != nil {
		t.Fatal(err)
	}
	cf, err := ReadCaptureFile(p)
	if err != nil {
		t.Fatal(err)
	}
	l := interpretCapture(cf, hidden)
	var keys []string
	for _, e := range l.Entries {
		keys = append(keys, e.Key)
	}
	wantKeys := []string{"aux_hidden_state[..., 0:8]", "aux_hidden_state[..., 8:16]", "aux_hidden_state[..., 16:24]", "hidden_state"}
	if !slices.Equal(keys, wantKeys) || len(l.Problems) != 0 {
		t.Fatalf("entries %q, problems %q; want %q and none", keys, l.Problems, wantKeys)
	}
	for j := range k {
		got := l.Entries[j].T
		if !slices.Equal(got.Shape, []int{n, hidden}) {
			t.Fatalf("%s shape %v, want [%d, %d]", keys[j], got.Shape, n, hidden)
		}
		for r := range n {
			for c := range hidden {
				if g, w := got.At(r*hidden+c), float64(aux[r*k*hidden+j*hidden+c]); !(g == w) {
					t.Fatalf("%s[%d, %d] = %v, want aux[%d, %d] = %v", keys[j], r, c, g, r, j*hidden+c, w)
				}
			}
		}
	}

	r := CheckFile(p, CheckOptions{Dims: &model.Dims{Hidden: hidden}})
	if st, _ := r.Rule(capture.RuleStructure); st.Status == capture.Fail {
		t.Errorf("structure %s %q; want aux_hidden_state's 3 layers read as such", st.Status, st.Detail)
	}
	sh, ok := r.Rule(capture.RuleShape)
	if !ok || sh.Status != capture.Fail || !strings.Contains(sh.Detail, "hidden_state has width 4, hidden_size = 8") || strings.Contains(sh.Detail, "aux_hidden_state") {
		t.Errorf("shape %v %s %q; want a failure naming hidden_state's width 4 alone (%v)", ok, sh.Status, sh.Detail, r.Lines())
	}
}
