package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckW8A8DumpNamed: a dump whose manifest says it was written with
// --w8a8 (on a GPU: fp8 activations), checked here against the same fp8
// checkpoint run without it (the CPU dequantizes), differs from hsdb's
// pass by fp8's rounding of every linear's input; check said only "as
// --model". The model rule now says which numerics each side ran. The
// GPU capture is stood in for by this CPU capture with the manifest's
// model.w8a8 set, as a --w8a8 job writes it; without it nothing is said.
func TestCheckW8A8DumpNamed(t *testing.T) {
	const model = "../../testdata/hf/deepseek_v3_fp8"
	out := filepath.Join(t.TempDir(), "d")
	if _, errs, code := runHsdb(t, "capture", "--model", model, "--format", "speculators", "--layers", "1,2,3,4", "--ids", "0,5,17,33", "--out", out); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errs)
	}
	want := "the dump was written with --w8a8 (the fp8 linears on fp8 activations) and hsdb's forward pass here runs without --w8a8"
	stdout, errs, code := runHsdb(t, "check", out, "--model", model, "--summary")
	if code != 0 || strings.Contains(stdout, "--w8a8") {
		t.Fatalf("check of a capture without --w8a8: exit %d, stderr %q\n%s", code, errs, stdout)
	}
	mp := filepath.Join(out, "manifest.json")
	b, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["model"].(map[string]any)["w8a8"] = true
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check", "diff"} {
		stdout, errs, code = runHsdb(t, cmd, out, "--model", model, "--summary")
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("%s of a --w8a8 dump: exit %d, stderr %q; want %q in\n%s", cmd, code, errs, want, stdout)
		}
	}
	// Without a model run there is no pass to differ from.
	if stdout, _, _ := runHsdb(t, "check", out, "--no-model", "--summary"); strings.Contains(stdout, "--w8a8") {
		t.Errorf("check --no-model of a --w8a8 dump speaks of a pass:\n%s", stdout)
	}
}
