package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureEagle3ShallowAllFormats: `hsdb capture --layers eagle3` on the
// llama fixture (3 decoder layers) is refused by --format hsdb (ids 1,
// N/2-1 = 0, N-4 = -1, N-1 = 2) and specforge (1, 0, -1), but --format
// speculators (2, N/2 = 1, N-3 = 0, N = 3) took id 0, the embeddings, as
// an aux layer: the same positions (hsdb -1 = speculators 0), so it is now
// refused alike, exit 2, nothing written, suggesting the speculators ids
// of hsdb's suggestion 0,1,2 (+1 each: 1,2,3). Expected text by hand.
func TestCaptureEagle3ShallowAllFormats(t *testing.T) {
	for _, c := range []struct{ format, want string }{
		{"hsdb", "--layers eagle3 is hsdb ids 1,0,-1,2 for 3 decoder layers, too few layers for EAGLE-3's spread (hsdb id -1 is outside 0..2); pass --layers with distinct hsdb layers in 0..2"},
		{"specforge", "--layers eagle3 is specforge ids 1,0,-1 for 3 decoder layers, too few layers for EAGLE-3's spread (specforge id -1 is outside 0..2)"},
		{"speculators", "--layers eagle3 is speculators ids 2,1,0,3 for 3 decoder layers, too few layers for EAGLE-3's spread (speculators id 0 is the embeddings, no decoder layer's output: hsdb id -1, outside 0..2); pass --layers with distinct speculators ids in 0..3 (0 = the embeddings, 3 = the last layer's output), 4 of them where the model has that many"},
	} {
		out := filepath.Join(t.TempDir(), "d")
		stdout, errs, code := runHsdb(t, "capture", "--model", "../../testdata/hf/llama", "--device", "cpu", "--format", c.format, "--layers", "eagle3", "--ids", "1,5,7", "--out", out)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("--format %s: exit %d, want 2 and %q in:\n%s%s", c.format, code, c.want, stdout, errs)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--format %s: refused, yet %s was written", c.format, out)
		}
	}
	_, errs, _ := runHsdb(t, "capture", "--model", "../../testdata/hf/llama", "--device", "cpu", "--format", "speculators", "--ids", "1,5,7", "--out", filepath.Join(t.TempDir(), "d"))
	if want := "e.g. --layers 1,2,3"; !strings.Contains(errs, want) {
		t.Errorf("speculators' suggestion: want %q in %s", want, errs)
	}
}
