package capture

import (
	"errors"
	"strings"
	"testing"
)

// TestEagle3TooShallow: on a model too shallow for EAGLE-3's spread the
// default --layers eagle3 is refused, and the refusal names the format's
// id range and a --layers the format accepts that holds as many ids as
// EAGLE-3 reads where the model has them (speculators 4: three aux layers
// and the last; SpecForge 3: aux_hidden_state is [1, len, 3·hidden],
// which its draft's fc reads; hsdb 4), so the files it gives are ones the
// trainer can read. Expectations derived by hand from Eagle3IDs, the ids
// in range kept and the deepest unused ids added: L = 5 (stories260K):
// hsdb 1,1,1,4 → 1,4 + 3,2; speculators 2,2,2,5 → 2,5 + 4,3;
// specforge 1,1,1 → 1 + 3,2, the deepest below the last layer (whose
// normed output SpecForge stores as hidden_state), so that its aux layers
// are hsdb's and speculators' (it was 1 + 4,3: aux layers 1,3,4 where the
// other formats suggested 1,2,3). L = 4 (the DeepSeek-V3 fixture): hsdb
// 1,1,0,3 → 0,1,3 + 2; specforge 1,1,0 → 0,1 + 2 (was 0,1,3). L = 3 (the
// llama fixture): hsdb 1,0,-1,2 → 0,1,2 (all there are); specforge 1,0,-1
// → 0,1 + 2, the last layer, as no other is left. L = 3: speculators
// 2,1,0,3 → 2,1,3 (id 0 is the embeddings, no layer's output: hsdb's
// -1) → 1,2,3, hsdb's 0,1,2 + 1. L = 2: speculators 2,1,-1,2 → 1,2
// (hsdb's 0,1; id 0 is not added: it was, as 0,1,2). L = 1: hsdb
// 1,-1,-3,0 → 0. The suggestion is then accepted by PlanLayers.
func TestEagle3TooShallow(t *testing.T) {
	cases := []struct {
		f         Format
		L         int
		rng, want string
	}{
		{FormatHsdb, 5, "hsdb layers in 0..4", "1,2,3,4"},
		{FormatSpeculators, 5, "speculators ids in 0..5", "2,3,4,5"},
		{FormatSpecForge, 5, "SGLang ids in 0..4", "1,2,3"},
		{FormatHsdb, 4, "hsdb layers in 0..3", "0,1,2,3"},
		{FormatSpecForge, 4, "SGLang ids in 0..3", "0,1,2"},
		{FormatHsdb, 3, "hsdb layers in 0..2", "0,1,2"},
		{FormatSpecForge, 3, "SGLang ids in 0..2", "0,1,2"},
		{FormatSpeculators, 3, "speculators ids in 0..3", "1,2,3"},
		{FormatSpeculators, 2, "speculators ids in 0..2", "1,2"},
		{FormatHsdb, 1, "hsdb layers in 0..0", "0"},
	}
	for _, c := range cases {
		_, err := PlanLayers(c.f, "eagle3", c.L, parseInts)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "distinct "+c.rng) ||
			!strings.HasSuffix(err.Error(), "e.g. --layers "+c.want) || strings.Count(err.Error(), ErrFormat.Error()) != 1 {
			t.Errorf("%s, %d layers: %v", c.f, c.L, err)
			continue
		}
		if _, err := PlanLayers(c.f, c.want, c.L, parseInts); err != nil {
			t.Errorf("%s, %d layers: the suggested --layers %s is refused: %v", c.f, c.L, c.want, err)
		}
	}
	// speculators at 3 layers: 2,1,0,3 was taken (0 = the embeddings,
	// where hsdb's 1,0,-1,2 and SpecForge's 1,0,-1, the same positions,
	// are refused); it is refused with the same words, naming id 0.
	_, err := PlanLayers(FormatSpeculators, "eagle3", 3, parseInts)
	if want := "--layers eagle3 is speculators ids 2,1,0,3 for 3 decoder layers, too few layers for EAGLE-3's spread (speculators id 0 is the embeddings, no decoder layer's output: hsdb id -1, outside 0..2)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("speculators, 3 layers: %v, want %q", err, want)
	}
}
