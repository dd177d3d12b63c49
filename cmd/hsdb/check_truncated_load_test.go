package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSpecForgeTruncatedLoad: a SpecForge dump of stories260K (5
// layers, SGLang ids 0,1,2) checked with --load-layers 0-2 was judged
// "problems found" (exit 1): its hidden_state, model.norm's output of the
// whole model, was compared with model.norm of the truncated load (the
// norm of layer 2's output) named "normed stream of layer 4 (model.norm
// output = HF's last output_hidden_states entry)", said to DEPART, and
// blamed on "another model or weights". The load cannot compute what the
// file holds: nothing comparable (exit 2), as for a layer past the loaded
// range, with the reason; the whole model finds the file valid.
func TestCheckSpecForgeTruncatedLoad(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sf")
	if _, errs, code := runHsdb(t, "capture", "--format", "specforge", "--layers", "0,1,2", "--ids", "1,403,407,261;1,400,281", "--out", out); code != 0 {
		t.Fatalf("capture: exit %d\n%s", code, errs)
	}
	if text, errs, code := runHsdb(t, "check", out, "--model", "embedded"); code != 0 {
		t.Fatalf("check with the whole model: exit %d, want 0 (valid)\n%s%s", code, text, errs)
	}
	text, errs, code := runHsdb(t, "check", out, "--model", "embedded", "--load-layers", "0-2")
	want := "skip  matches model     not comparable with this partial load: hidden_state is by its format model.norm's output, the final norm of layer 4's output, but the model loads only decoder layers 0-2 (--load-layers 0-2), where model.norm normalizes layer 2's"
	if code != 2 || !strings.Contains(text, want) || strings.Contains(text, "DEPARTS") {
		t.Errorf("check --load-layers 0-2: exit %d, want 2 and %q\n%s%s", code, want, text, errs)
	}
}
