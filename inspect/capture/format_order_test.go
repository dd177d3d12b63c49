package capture

import "testing"

// TestTrainerIDsAscending: the aux hidden states a draft is served are
// collected by vLLM (and SGLang) during the decoder loop, `if idx in
// self.aux_hidden_state_layers: aux_hidden_states.append(hidden_states +
// residual)` in vllm/model_executor/models/llama.py: in ascending layer
// order, whatever order the ids were listed in. A trainer file written in
// another order (hsdb wrote --layers 30,2,58,61 as given, and 2,1,0,3,
// eagle3's ids at 3 layers, now refused as too shallow, as given) trains the draft on features permuted against what
// it is served. The trainer formats' ids are written ascending; the
// mapping lines follow them. Orders by hand.
func TestTrainerIDsAscending(t *testing.T) {
	for _, c := range []struct {
		f          Format
		spec       string
		L          int
		want, srcs string
	}{
		{FormatSpeculators, "30,2,58,61", 61, "2,30,58,61", "1,29,57,60"},
		{FormatSpeculators, "2,1,0,3", 3, "0,1,2,3", "-1,0,1,2"},
		{FormatSpecForge, "29,1,57", 61, "1,29,57", "1,29,57,-1"},
	} {
		p, err := PlanLayers(c.f, c.spec, c.L, parseInts)
		if err != nil {
			t.Fatalf("%s %s: %v", c.f, c.spec, err)
		}
		var layers []int
		for _, s := range p.Srcs {
			layers = append(layers, s.Layer)
		}
		if joinInts(p.IDs) != c.want || joinInts(layers) != c.srcs || len(p.Lines) != len(p.Srcs) {
			t.Errorf("%s %s: ids %v sources %v, want %s and %s", c.f, c.spec, p.IDs, layers, c.want, c.srcs)
		}
		for i, id := range p.IDs {
			if want := mappingLine(c.f, id, p.Srcs[i], c.L); p.Lines[i] != want {
				t.Errorf("%s %s: line %d %q, want %q", c.f, c.spec, i, p.Lines[i], want)
			}
		}
	}
}
