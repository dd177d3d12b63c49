package check

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDiffTableColumns: hsdb diff's table on a SpecForge or speculators
// file. Its keys ("aux_hidden_state[..., 192:288]", "hidden_states[:, 3]
// (speculators id 3)") are longer than the 22 characters the key column
// was padded to, so the layer, cos and max|Δ| columns slid right row by
// row under a header that stayed put; and the entries the format itself
// names (speculators id 0 = the embeddings, SpecForge's hidden_state =
// the final norm's output), compared and scored, showed layer "?" as if
// unlabelled. Derived by hand: every row's layer cell ends in the same
// column as the header's "layer", and those two entries read "emb" and
// "norm".
func TestDiffTableColumns(t *testing.T) {
	sc := Score{Cos: 1, MaxAbs: 0, RefMax: 1}
	r := &Report{Path: "f", Matches: []EntryMatch{
		{Key: "aux_hidden_state[..., 192:288]", Label: 2, HasClaimed: true, ClaimedScore: sc, Best: Candidate{Kind: CandStream, Layer: 2}, BestScore: sc},
		{Key: "hidden_states[:, 0] (speculators id 0)", Label: -1, Kind: CandEmbed, HasClaimed: true, ClaimedScore: sc, Best: Candidate{Kind: CandEmbed, Layer: -1}, BestScore: sc},
		{Key: "hidden_state", Label: -1, Kind: CandNormed, HasClaimed: true, ClaimedScore: sc, Best: Candidate{Kind: CandNormed, Layer: 2, Last: true}, BestScore: sc},
		{Key: "x", Label: 0, HasClaimed: true, ClaimedScore: sc, Best: Candidate{Kind: CandStream, Layer: 0}, BestScore: sc},
	}}
	lines, _ := r.DiffLines()
	head := lines[1]
	i := strings.Index(head, "layer")
	if i < 0 {
		t.Fatalf("no header: %q", lines)
	}
	end := utf8.RuneCountInString(head[:i]) + len("layer")
	want := []string{"2", "emb", "norm", "0"}
	for k, m := range r.Matches {
		line := lines[2+k]
		if !strings.HasPrefix(line, "  "+m.Key) {
			t.Fatalf("row %d: %q", k, line)
		}
		rest := line[len("  "+m.Key):]
		lab := strings.Fields(rest)[0]
		at := utf8.RuneCountInString("  "+m.Key) + strings.Index(rest, lab) + len(lab)
		if lab != want[k] || at != end {
			t.Errorf("row %d: layer %q ending at column %d, want %q ending at %d (header %q, row %q)", k, lab, at, want[k], end, head, line)
		}
	}
}
