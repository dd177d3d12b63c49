package capture

import "testing"

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
