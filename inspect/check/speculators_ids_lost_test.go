package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestSpeculatorsIDsLostNotRelabelled: a speculators file of ids 0,1,2,3
// (the embeddings and decoder layers 0-2) cut to hidden_states[:, :3]
// after it was written, checked in its dump's directory, where the
// manifest's hsdb layers 0,1,2 become the expected --layers. Its entries
// were then labelled 0,1,2 by position although the structure rule says
// which layer each is cannot be told, and the report blamed the wrong
// thing ("labelled layer 0, matches embeddings"; "labelled layer 1,
// matches stream of layer 0": the HF off-by-one). The entries stay
// unlabelled, and the layer count says why it does not compare them.
func TestSpeculatorsIDsLostNotRelabelled(t *testing.T) {
	ds := loadRef(t, "deepseek_v3")
	ids, a, b := ds.seq(2)
	n := b - a
	cols := [][]float32{ds.rows(t, "embed", a, b), ds.rows(t, "layer.0", a, b), ds.rows(t, "layer.1", a, b)}
	x := make([]float32, 0, n*3*96)
	for i := range n {
		for _, c := range cols {
			x = append(x, c[i*96:(i+1)*96]...)
		}
	}
	p := filepath.Join(t.TempDir(), "hs_0.safetensors")
	meta := map[string]string{"convention": "speculators", "layer_ids": "0,1,2,3"}
	if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "token_ids", T: tensor.FromI64(ids, n)}, {Name: "hidden_states", T: tensor.FromF32(x, n, 3, 96)}}, meta); err != nil {
		t.Fatal(err)
	}
	o := optsFor(t, "deepseek_v3", dsEngine(t))
	o.Layers = []int{0, 1, 2}
	r, text := verdictOf(t, p, o)
	if r.Verdict() != VerdictProblems {
		t.Errorf("verdict %s, want problems\n%s", r.Verdict(), text)
	}
	if s, ok := r.Rule(capture.RuleStructure); !ok || s.Status != capture.Fail || !strings.Contains(s.Detail, `names 4 ids but hidden_states holds 3`) {
		t.Errorf("structure %+v\n%s", s, text)
	}
	if lc, ok := r.Rule(capture.RuleLayerCount); !ok || lc.Status != capture.Skip || !strings.Contains(lc.Detail, "not matched to --layers 0,1,2 by position") {
		t.Errorf("layer count %+v, want skip\n%s", lc, text)
	}
	for _, bad := range []string{"labelled layer", "output_hidden_states[i] was used for layer i"} {
		if strings.Contains(text, bad) {
			t.Errorf("names %q for entries whose layers cannot be told\n%s", bad, text)
		}
	}
}
