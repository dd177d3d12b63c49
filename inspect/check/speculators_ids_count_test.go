package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestSpeculatorsIDsCountMismatch: a speculators file whose metadata
// names four layer_ids (2,3,4,5) while hidden_states holds three (a file
// cut to hidden_states[:, :3] after hsdb wrote it) was read as three
// unlabelled entries and judged valid: the mismatch, which leaves each
// entry's layer unknown, went unsaid. It is now a structure failure that
// names both counts. Ids that are not integers are named too.
func TestSpeculatorsIDsCountMismatch(t *testing.T) {
	dir := t.TempDir()
	ids := tensor.FromI64([]int64{1, 2, 3, 4}, 4)
	x := make([]float32, 4*3*8)
	for i := range x {
		x[i] = float32(i%89) - 30
	}
	for _, c := range []struct {
		layerIDs string
		want     string
	}{
		{"2,3,4,5", `metadata layer_ids "2,3,4,5" names 4 ids but hidden_states holds 3`},
		{"2,x,5", `"x" is not a layer id`},
	} {
		p := filepath.Join(dir, "hs_0.safetensors")
		meta := map[string]string{"convention": "speculators", "layer_ids": c.layerIDs}
		if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "token_ids", T: ids}, {Name: "hidden_states", T: tensor.FromF32(x, 4, 3, 8)}}, meta); err != nil {
			t.Fatal(err)
		}
		r := CheckFile(p, CheckOptions{})
		s, ok := r.Rule(capture.RuleStructure)
		if !ok || s.Status != capture.Fail || !strings.Contains(s.Detail, c.want) {
			t.Errorf("layer_ids %q: structure %+v, want FAIL with %q", c.layerIDs, s, c.want)
		}
		if r.Verdict() == VerdictValid {
			t.Errorf("layer_ids %q: verdict valid", c.layerIDs)
		}
	}
}
