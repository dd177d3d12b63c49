package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestSpecForgeZeroWidthAux: a SpecForge sample whose aux_hidden_state is
// [seq, 0] holds none of the k layers SpecForge trains on; it was read as
// zero layers and, with a loss_mask, the file was called valid. The
// structure rule now fails naming the shapes.
func TestSpecForgeZeroWidthAux(t *testing.T) {
	v := make([]float32, 3*8)
	for i := range v {
		v[i] = float32(i%5) - 2
	}
	p := filepath.Join(t.TempDir(), "sample.safetensors")
	if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "input_ids", T: ids64(1, 2, 3)}, {Name: "loss_mask", T: ids64(0, 1, 1)},
		{Name: "hidden_state", T: tensor.FromF32(v, 3, 8)}, {Name: "aux_hidden_state", T: tensor.New(tensor.F32, 3, 0)}}, nil); err != nil {
		t.Fatal(err)
	}
	r := CheckFile(p, CheckOptions{})
	if st, _ := r.Rule(capture.RuleStructure); !r.Failed() || st.Status != capture.Fail || !strings.Contains(st.Detail, "aux_hidden_state is [3, 0]") {
		t.Errorf("aux_hidden_state [3, 0]: structure %s %q; want a failure naming it (%v)", st.Status, st.Detail, r.Lines())
	}
}
