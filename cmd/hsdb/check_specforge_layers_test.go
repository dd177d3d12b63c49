package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSpecForgeDirLayers: a SpecForge sample holds no layer labels,
// so check labels its aux layers from --layers; on a directory hsdb wrote,
// whose manifest records the layers, a --layers that differs is named at
// the directory, with the --layers that checks what the files hold. Before,
// `check DIR --layers 1,2,3` of SGLang ids 0,1,2 (hsdb layers 0,1,2: id s
// is decoder layer s's output) said only that every aux layer departs
// from the layer asked, and blamed the files ("HF output_hidden_states[i]
// was used for layer i"). The right --layers passes.
func TestCheckSpecForgeDirLayers(t *testing.T) {
	const model = "../../testdata/hf/deepseek_v3"
	dir, data, out := specforgeCapture(t, model)
	want := "--layers 1,2,3, but the manifest records hsdb layers 0,1,2 (specforge ids 0,1,2): --layers 0,1,2 checks what the files hold"
	for _, cmd := range []string{"check", "diff"} {
		stdout, errs, code := runHsdb(t, cmd, out, "--model", model, "--layers", "1,2,3", "--summary")
		if code != 1 || !strings.Contains(stdout, "FAIL  layer count       "+want) {
			t.Errorf("%s --layers 1,2,3: exit %d, stderr %q; want exit 1 and %q in\n%s", cmd, code, errs, want, stdout)
		}
		stdout, errs, code = runHsdb(t, cmd, out, "--model", model, "--layers", "0,1,2", "--summary")
		if code != 0 || strings.Contains(stdout, "layer count") {
			t.Errorf("%s --layers 0,1,2: exit %d, stderr %q\n%s", cmd, code, errs, stdout)
		}
		// SpecForge's aux layers are labelled by position: the order counts.
		stdout, _, code = runHsdb(t, cmd, out, "--model", model, "--layers", "2,1,0", "--summary")
		if w := "--layers 2,1,0, but the manifest records hsdb layers 0,1,2"; code != 1 || !strings.Contains(stdout, w) {
			t.Errorf("%s --layers 2,1,0: exit %d; want exit 1 and %q in\n%s", cmd, code, w, stdout)
		}
	}
	// An hsdb dump labels its entries and its files' metadata records
	// their order (the order a trainer concatenates them): the directory
	// takes the manifest's layers in any order, and the layer-count rule
	// names the other order once, per file.
	hs := filepath.Join(dir, "hs")
	if _, errs, code := runHsdb(t, "capture", "--model", model, "--layers", "3,1", "--data", data, "--out", hs); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errs)
	}
	if stdout, errs, code := runHsdb(t, "check", hs, "--model", model, "--layers", "1,3", "--summary"); code != 1 || !strings.Contains(stdout, "requested 1,3: the same layers in another order: the file's metadata records 3,1 in this order") || strings.Contains(stdout, "but the manifest records") {
		t.Errorf("check of layers 3,1 --layers 1,3: exit %d, stderr %q\n%s", code, errs, stdout)
	}
	if stdout, errs, code := runHsdb(t, "check", hs, "--model", model, "--layers", "3,1", "--summary"); code != 0 {
		t.Errorf("check of layers 3,1 --layers 3,1: exit %d, stderr %q\n%s", code, errs, stdout)
	}
	if stdout, _, code := runHsdb(t, "check", hs, "--model", model, "--layers", "1,2", "--summary"); code != 1 || !strings.Contains(stdout, "--layers 1,2, but the manifest records hsdb layers 3,1: --layers 3,1 checks what the files hold") {
		t.Errorf("check of layers 3,1 --layers 1,2: exit %d\n%s", code, stdout)
	}
}

// specforgeCapture captures model's hsdb layers 0,1,2 in SpecForge's
// format from one --data row into DIR/sf, DIR a new temporary directory;
// it returns DIR, the --data file and the capture.
func specforgeCapture(t *testing.T, model string) (dir, data, out string) {
	t.Helper()
	dir = t.TempDir()
	data = filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(data, []byte(`{"input_ids": [0, 5, 17, 33, 2, 9, 41]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "sf")
	if _, errs, code := runHsdb(t, "capture", "--model", model, "--format", "specforge", "--layers", "0,1,2", "--data", data, "--out", out); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errs)
	}
	return dir, data, out
}
