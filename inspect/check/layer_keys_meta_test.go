package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestCheckLayerKeyNegative: a key hidden_states.-1 fails the structure
// rule naming the key, as an overflowing number does
// (TestCheckLayerKeyNotAnIndex): it was labelled layer -1, the value that
// means "unlabelled", and the file passed structure.
func TestCheckLayerKeyNegative(t *testing.T) {
	v := make([]float32, 3*8)
	for i := range v {
		v[i] = float32(i%5) - 2
	}
	p := filepath.Join(t.TempDir(), "capture.safetensors")
	if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "input_ids", T: ids64(1, 2, 3)},
		{Name: "hidden_states.-1", T: tensor.FromF32(v, 3, 8)}, {Name: "hidden_states.2", T: tensor.FromF32(v, 3, 8)}}, nil); err != nil {
		t.Fatal(err)
	}
	r := CheckFile(p, CheckOptions{})
	st, _ := r.Rule(capture.RuleStructure)
	if want := "hidden_states.-1: -1 is not a layer index"; !r.Failed() || st.Status != capture.Fail || !strings.Contains(st.Detail, want) {
		t.Errorf("structure %s %q; want a failure naming %q", st.Status, st.Detail, want)
	}
}

// TestCheckMetadataLayersContradictKeys: an hsdb sequence file records the
// capture's layers twice, as its keys (hidden_states.{layer}) and as its
// metadata's "layers" (the order they were captured in). Metadata that
// names other layers than the keys ("0,1,2" or "2,2" for keys 0 and 2),
// or no layers at all ("a,b", "-1,2"), was ignored and the file passed;
// it now fails the structure rule naming both. Metadata that is the keys
// in another order is the capture's order and still passes structure
// (TestKeyedLayerOrder judges it against --layers).
func TestCheckMetadataLayersContradictKeys(t *testing.T) {
	v := make([]float32, 3*8)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	w := make([]float32, 3*8)
	for i := range w {
		w[i] = float32(i%5) + 1
	}
	for _, c := range []struct {
		layers string
		want   string // "" for a structure pass
	}{
		{"0,2", ""},
		{"2,0", ""},
		{"0,1,2", `__metadata__ layers "0,1,2" are not the layers of the file's keys (0,2)`},
		{"2,2", `__metadata__ layers "2,2" are not the layers of the file's keys (0,2): layer 2 given twice`},
		{"a,b", `__metadata__ layers "a,b" are not the layers of the file's keys (0,2): layer "a" is not a non-negative integer`},
		{"-1,2", `__metadata__ layers "-1,2" are not the layers of the file's keys (0,2): layer "-1" is not a non-negative integer`},
	} {
		p := filepath.Join(t.TempDir(), "seq_000000.safetensors")
		meta := map[string]string{"hsdb": "hsdb-capture-dump/1", "layers": c.layers, "what": "stream"}
		if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "input_ids", T: ids64(1, 2, 3)},
			{Name: "hidden_states.0", T: tensor.FromF32(v, 3, 8)}, {Name: "hidden_states.2", T: tensor.FromF32(w, 3, 8)}}, meta); err != nil {
			t.Fatal(err)
		}
		r := CheckFile(p, CheckOptions{})
		st, _ := r.Rule(capture.RuleStructure)
		switch {
		case c.want == "" && st.Status != capture.Pass:
			t.Errorf("layers %q: structure %s %q; want a pass", c.layers, st.Status, st.Detail)
		case c.want != "" && (!r.Failed() || st.Status != capture.Fail || !strings.Contains(st.Detail, c.want)):
			t.Errorf("layers %q: structure %s %q; want a failure naming %q", c.layers, st.Status, st.Detail, c.want)
		}
	}
}
