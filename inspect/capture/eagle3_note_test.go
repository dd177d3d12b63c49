package capture

import (
	"strings"
	"testing"
)

// TestEagle3AuxNote: a speculators file whose aux layers are not EAGLE-3's
// three was written without a word, although the drafts' fc reads
// 3·hidden (speculators' hidden_states[:, :-1].flatten(1) of three ids).
// Counts by hand: speculators ids 1,2,3 (capture layers 0,1,2 without the
// embeddings) hold 2 aux ids; 0,1,2,3 hold 3 (no note); SpecForge's other
// counts are refused, not noted (TestSpecForgeAuxRefused), so no note;
// hsdb's own format has no trainer (no note).
func TestEagle3AuxNote(t *testing.T) {
	for _, c := range []struct {
		f    Format
		ids  []int
		want string
	}{
		{FormatSpeculators, []int{1, 2, 3}, "holds 2 aux ids before the last (hidden_states[:, :-1]), EAGLE-3's draft reads 3"},
		{FormatSpeculators, []int{0, 1, 2, 3}, ""},
		// "the file holds 1 aux ids": one id before the last is one aux id.
		{FormatSpeculators, []int{1, 3}, "holds 1 aux id before the last (hidden_states[:, :-1])"},
		{FormatSpecForge, []int{0, 1}, ""},
		{FormatSpecForge, []int{0, 1, 2}, ""},
		{FormatHsdb, []int{1, 2}, ""},
	} {
		got := Eagle3AuxNote(c.f, c.ids)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s %v: %q, want %q", c.f, c.ids, got, c.want)
		}
	}
}
