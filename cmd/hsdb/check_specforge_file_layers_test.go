package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSpecForgeFileLayers: a lone SpecForge sample (no manifest
// beside it) names no layers, so check labels its aux layers from
// --layers. Captured at hsdb layers 0,1,2 and checked with --layers
// 1,2,3, every aux layer departs from the layer asked while matching the
// decoder layer before it: check said the file was written off by one
// ("HF output_hidden_states[i] was used for layer i"). It now says which
// layer each aux layer holds and which --layers checks the file; the
// right --layers passes, and a --layers with one layer right is no such
// case.
func TestCheckSpecForgeFileLayers(t *testing.T) {
	const model = "../../testdata/hf/deepseek_v3"
	dir, _, out := specforgeCapture(t, model)
	files, _ := filepath.Glob(filepath.Join(out, "rows_*", "data_0.ckpt*"))
	if len(files) != 1 {
		t.Fatalf("capture wrote %v, want one data_0.ckpt", files)
	}
	// A lone file: no manifest.json to read its layers from.
	lone := filepath.Join(dir, "lone", filepath.Base(files[0]))
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(lone), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// --layers 1,2,3 labels the aux layers (SGLang ids 0,1,2 = hsdb
	// layers 0,1,2) 1, 2 and 3: each holds the layer one before.
	pairs := "aux layer 1 matches hsdb layer 0, aux layer 2 matches hsdb layer 1, aux layer 3 matches hsdb layer 2"
	rule := "FAIL  layer count       --layers 1,2,3, but the values match other layers: " + pairs + ": the file holds layers 0,1,2, --layers 0,1,2 checks what it holds"
	diag := "diagnosis: " + pairs + ": the file holds layers 0,1,2, --layers 0,1,2 checks what it holds"
	for _, path := range []string{lone, files[0]} { // the file in its dump too, checked alone
		stdout, errs, code := runHsdb(t, "check", path, "--model", model, "--layers", "1,2,3")
		if code != 1 || !strings.Contains(stdout, rule) || !strings.Contains(stdout, diag) ||
			strings.Contains(stdout, "output_hidden_states[i] was used for layer i") || strings.Contains(stdout, "swapped") {
			t.Errorf("check %s --layers 1,2,3: exit %d, stderr %q; want exit 1, %q and %q, and no blame of the file in\n%s", path, code, errs, rule, diag, stdout)
		}
		stdout, errs, code = runHsdb(t, "diff", path, "--model", model, "--layers", "1,2,3")
		if code != 1 || !strings.Contains(stdout, "FAIL  layer count: --layers 1,2,3, but the values match other layers: "+pairs) {
			t.Errorf("diff %s --layers 1,2,3: exit %d, stderr %q\n%s", path, code, errs, stdout)
		}
		if stdout, errs, code := runHsdb(t, "check", path, "--model", model, "--layers", "0,1,2"); code != 0 || strings.Contains(stdout, "matches hsdb layer") {
			t.Errorf("check %s --layers 0,1,2: exit %d, stderr %q\n%s", path, code, errs, stdout)
		}
	}
	// --layers 0,2,1: aux layer 0 holds layer 0; the other two are
	// exchanged, which the labels' swap diagnosis names.
	stdout, _, code := runHsdb(t, "check", lone, "--model", model, "--layers", "0,2,1")
	if code != 1 || strings.Contains(stdout, "matches hsdb layer") || !strings.Contains(stdout, "hold each other's layers") {
		t.Errorf("check --layers 0,2,1: exit %d\n%s", code, stdout)
	}
}
