package check

import (
	"strings"
	"testing"
)

// TestDiagnoseSwappedLayers: a DeepSeek-V3 capture whose entries labelled
// layers 1 and 2 hold HF's layer 2 and layer 1 outputs (two labels
// exchanged) is named as a swap for both entries, not as HF's
// output_hidden_states off-by-one (that would move every label by one),
// and not as routing or the experts (each entry is exactly a layer of
// the model's own forward pass).
func TestDiagnoseSwappedLayers(t *testing.T) {
	ds := loadRef(t, "deepseek_v3")
	ids, a, b := ds.seq(2)
	o := optsFor(t, "deepseek_v3", dsEngine(t))
	p := writeCapture(t, ids, map[int][]float32{
		0: ds.rows(t, "layer.0", a, b),
		1: ds.rows(t, "layer.2", a, b),
		2: ds.rows(t, "layer.1", a, b),
	}, 96)
	r, text := verdictOf(t, p, o)
	if r.Verdict() != VerdictProblems {
		t.Fatalf("verdict %s, want problems\n%s", r.Verdict(), text)
	}
	for _, w := range []string{
		"the entries labelled layer 1 and layer 2 hold each other's layers",
		"the entries labelled layer 2 and layer 1 hold each other's layers",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q\n%s", w, text)
		}
	}
	for _, bad := range []string{"output_hidden_states[i] was used for layer i", "the first MoE layer captured", "TRT-Model-Connect #662"} {
		if strings.Contains(text, bad) {
			t.Errorf("names %q for two swapped layers\n%s", bad, text)
		}
	}
}
