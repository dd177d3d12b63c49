package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/inspect/capture"
)

// TestSeqLensSourceNamed: checking an hsdb dump directory without a model
// and without --seq-lens said "one sequence of 5 tokens, as --seq-lens
// says": the length came from the dump's manifest, not from a flag the
// user never gave. The rule names the manifest; with --seq-lens given it
// still names the flag. Lengths by hand: the two sequences written, 5 and
// 3 tokens.
func TestSeqLensSourceNamed(t *testing.T) {
	_, dir := llamaDumpOf(t, [][]int32{{1, 5, 7, 9, 11}, {1, 20, 30}}, []int{0, 2})
	pr := CheckPath(dir, CheckOptions{})
	if len(pr.Files) != 2 {
		t.Fatalf("%d files", len(pr.Files))
	}
	for i, want := range []string{"one sequence of 5 tokens, as the dump's manifest says", "one sequence of 3 tokens, as the dump's manifest says"} {
		x, ok := pr.Files[i].Rule(capture.RuleOneSeq)
		if !ok || x.Status != capture.Pass || !strings.Contains(x.Detail, want) || strings.Contains(x.Detail, "--seq-lens") {
			t.Errorf("file %d: %+v, want %q", i, x, want)
		}
	}
	r := CheckFile(filepath.Join(dir, "seq_000000.safetensors"), CheckOptions{SeqLens: []int{5}})
	if x, _ := r.Rule(capture.RuleOneSeq); !strings.Contains(x.Detail, "as --seq-lens says") {
		t.Errorf("with --seq-lens: %+v", x)
	}
}
