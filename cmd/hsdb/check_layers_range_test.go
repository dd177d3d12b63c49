package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLayersOutOfRange: `check --layers 5,6,7,8` of a dump on the
// DeepSeek-V3 fixture (num_hidden_layers 4 in its config.json: hsdb
// layers 0..3) reported "labelled layers 0,1,2,3, requested 5,6,7,8" and
// "problems found" (exit 1), never saying that no such layer exists. It is
// now one error, exit 2 (nothing comparable), naming the ids, the model's
// layer count and the range, for check (text and --json) and diff alike.
// --layers 1,2,3,4 (4 is a layer position, speculators' last id) still
// reaches the file, whose layer-count rule names layer 4 as outside 0..3;
// so does the rule of a dump checked without --model (the manifest's
// layer count).
func TestCheckLayersOutOfRange(t *testing.T) {
	const model = "../../testdata/hf/deepseek_v3"
	dir := filepath.Join(t.TempDir(), "d")
	if out, errs, code := runHsdb(t, "capture", "--model", model, "--layers", "0,1,2,3", "--ids", "0,5,17,33", "--out", dir); code != 0 {
		t.Fatalf("capture: exit %d\n%s%s", code, out, errs)
	}
	want := "layers 5,6,7,8 are outside the model: " + model + " has 4 decoder layers, and --layers takes hsdb layers 0..3"
	for _, cmd := range []string{"check", "diff"} {
		out, errs, code := runHsdb(t, cmd, dir, "--model", model, "--layers", "5,6,7,8")
		if code != 2 || !strings.Contains(errs, want) || strings.Contains(out, "labelled layers") {
			t.Errorf("%s --layers 5,6,7,8: exit %d, want 2 and %q\nstdout:\n%s\nstderr:\n%s", cmd, code, want, out, errs)
		}
	}
	out, _, code := runHsdb(t, "check", dir, "--model", model, "--layers", "8,1", "--json")
	var r struct {
		Error string `json:"error"`
		Exit  int    `json:"exit"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 2 || r.Exit != 2 || !strings.Contains(r.Error, "layer 8 is outside the model: "+model+" has 4 decoder layers") {
		t.Errorf("check --json --layers 8,1: exit %d, %v:\n%s", code, err, out)
	}
	out, _, code = runHsdb(t, "check", dir, "--model", model, "--layers", "1,2,3,4")
	if code != 1 || !strings.Contains(out, "labelled layers 0,1,2,3, requested 1,2,3,4; layer 4 is outside the model's hsdb layers 0..3 (4 decoder layers)") {
		t.Errorf("check --layers 1,2,3,4: exit %d:\n%s", code, out)
	}
	// Without --model the dump's manifest gives the layer count (its
	// model.dims.num_hidden_layers, 4): the rule names the ids.
	out, _, code = runHsdb(t, "check", dir, "--no-model", "--layers", "5,6,7,8")
	if code != 1 || !strings.Contains(out, "requested 5,6,7,8; layers 5,6,7,8 are outside the model's hsdb layers 0..3 (4 decoder layers)") {
		t.Errorf("check --no-model --layers 5,6,7,8: exit %d:\n%s", code, out)
	}
}
