package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureEagle3AuxNote: `hsdb capture --format specforge --layers
// 0,1` wrote aux_hidden_state [1, len, 2·hidden] without a word, though
// SpecForge's draft reads 3 layers; the job now says so. With three ids
// (0,1,2, all the llama fixture's decoder layers) it says nothing.
func TestCaptureEagle3AuxNote(t *testing.T) {
	for _, c := range []struct {
		layers string
		note   bool
	}{{"0,1", true}, {"0,1,2", false}} {
		var out, errOut bytes.Buffer
		args := []string{"capture", "--model", "../../testdata/hf/llama", "--format", "specforge", "--layers", c.layers, "--ids", "1,5,7,9", "--out", filepath.Join(t.TempDir(), "d")}
		if code := hsdbMain(args, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Fatalf("--layers %s: exit %d: %s", c.layers, code, errOut.String())
		}
		has := strings.Contains(out.String(), "note: specforge ids "+c.layers+": aux_hidden_state holds 2 layers")
		if has != c.note {
			t.Errorf("--layers %s: note %v, want %v:\n%s", c.layers, has, c.note, out.String())
		}
	}
}
