package capture

import (
	"encoding/json"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// TestCaptureInfoSources: a speculators dump's summary said "speculators
// ids 0,1,2,3 (hsdb layers 0,1,2)": four ids, three layers, and nothing
// said that id 0 is the embeddings (model.embed_tokens, HF
// output_hidden_states[0]), no layer's output; a SpecForge dump's did not
// say that its hidden_state is model.norm's output. Expected text by hand
// from the formats' conventions.
func TestCaptureInfoSources(t *testing.T) {
	for _, c := range []struct {
		info CaptureInfo
		want string
	}{
		{CaptureInfo{Format: "speculators", FormatIDs: []int{0, 1, 2, 3}, Layers: []int{0, 1, 2}}, "the embeddings (id 0) and hsdb layers 0,1,2"},
		{CaptureInfo{Format: "speculators", FormatIDs: []int{1, 2, 3}, Layers: []int{0, 1, 2}}, "hsdb layers 0,1,2"},
		{CaptureInfo{Format: "speculators", FormatIDs: []int{0}}, "the embeddings (id 0)"},
		{CaptureInfo{Format: "specforge", FormatIDs: []int{0, 1, 3}, Layers: []int{0, 1, 3}}, "hsdb layers 0,1,3 (aux_hidden_state) and model.norm's output (hidden_state)"},
		{CaptureInfo{Layers: []int{2, 30}}, "layers 2,30"},
	} {
		if got := c.info.Sources(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.info, got, c.want)
		}
	}
}

// hfIndexIs reports whether the manifest's HF index of key is want.
func hfIndexIs(m map[string]*int, key string, want int) bool {
	p, ok := m[key]
	return ok && p != nil && *p == want
}

// hfIndexNull reports whether key is in the manifest's HF index as null.
func hfIndexNull(m map[string]*int, key string) bool {
	p, ok := m[key]
	return ok && p == nil
}

// TestManifestHFIndexNull: the last layer's raw output has no index in
// HF's output_hidden_states (its last entry has the final norm applied).
// The manifest wrote -1 for it, which Python reads as
// output_hidden_states[-1]: exactly the post-norm tensor the file does
// not hold. It is null in manifest.json now (by hand: 5 layers, layer 4
// is the last; layer 2 is HF index 3).
func TestManifestHFIndexNull(t *testing.T) {
	m := newManifest(DumpInfo{Model: ModelInfo{Dims: map[string]int{"num_hidden_layers": 5}}, Layers: []int{2, 4}, What: WhatStream}, tensor.F32)
	b, err := json.Marshal(m.Capture)
	if err != nil {
		t.Fatal(err)
	}
	want := `"hf_output_hidden_states_index":{"hidden_states.2":3,"hidden_states.4":null}`
	if !strings.Contains(string(b), want) {
		t.Errorf("capture %s\nwant %s", b, want)
	}
}

// TestManifestHFNoteNamesLastLayer: the manifest's hf_note ended "so the
// last decoder layer (-1 here) has no HF index" whether or not the dump
// held that layer (layers 2,3 of 5 have HF indices 3 and 4 and no -1).
// Now it names the layer only when captured. By hand: 5 layers, the last
// is 4, HF output_hidden_states has 6 entries, [5] post final norm.
func TestManifestHFNoteNamesLastLayer(t *testing.T) {
	const base = "hidden_states.{i} (stream = hidden_states + residual) equals HF output_hidden_states[i+1]; index 0 is the embeddings, and HF's last entry has the final norm applied"
	for _, c := range []struct {
		layers []int
		index  map[string]int
		note   string
	}{
		{[]int{2, 3}, map[string]int{"hidden_states.2": 3, "hidden_states.3": 4}, base},
		{[]int{2, 4}, map[string]int{"hidden_states.2": 3, "hidden_states.4": -1}, base + ", so hidden_states.4, the last decoder layer's raw output, has no HF index (null here; output_hidden_states[-1] is the normed entry)"},
	} {
		m := newManifest(DumpInfo{Model: ModelInfo{Dims: map[string]int{"num_hidden_layers": 5}}, Layers: c.layers, What: WhatStream}, tensor.F32)
		if m.Capture.HFNote != c.note {
			t.Errorf("layers %v: hf_note %q, want %q", c.layers, m.Capture.HFNote, c.note)
		}
		if len(m.Capture.HFIndex) != len(c.index) {
			t.Errorf("layers %v: index %v, want %v", c.layers, m.Capture.HFIndex, c.index)
		}
		for k, v := range c.index { // -1 here: null in the manifest
			if ok := v == -1 && hfIndexNull(m.Capture.HFIndex, k) || hfIndexIs(m.Capture.HFIndex, k, v); !ok {
				t.Errorf("layers %v: %s → %v, want %d (-1: null)", c.layers, k, m.Capture.HFIndex[k], v)
			}
		}
	}
}

// TestEagle3TooShallowWording: the refusal of --layers eagle3 on
// stories260K (5 layers) asked for "distinct hsdb layers in 0..4, 4 where
// the model has them", which reads as layer 4. It now asks for 4 of them.
// By hand: eagle3 hsdb ids 1, 5/2-1 = 1, 5-4 = 1, 5-1 = 4; the suggestion
// keeps 1 and 4 and adds the deepest unused, 3 and 2 (TestEagle3TooShallow).
// The clash is said of the eagle3 ids, not as "--layers: hsdb id 1 is
// given twice", which the user never gave.
func TestEagle3TooShallowWording(t *testing.T) {
	_, err := PlanLayers(FormatHsdb, "eagle3", 5, parseInts)
	want := "invalid capture request: --layers eagle3 is hsdb ids 1,1,1,4 for 5 decoder layers, too few layers for EAGLE-3's spread (hsdb id 1 comes twice); pass --layers with distinct hsdb layers in 0..4, 4 of them where the model has that many (EAGLE-3's three aux layers and the last), e.g. --layers 1,2,3,4"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
