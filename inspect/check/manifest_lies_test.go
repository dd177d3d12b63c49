package check

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/capture"
)

// TestCheckManifestShapeDTypeLies: a dump whose manifest records another
// shape or dtype for a tensor than its file holds fails the checksums
// rule naming the tensor, what the file holds and what the manifest
// records. Only the sha256 was compared, and it covers the bytes alone, so
// a manifest declaring hidden_states.1 as [3, hidden+1], [-3, hidden] or
// BF16 over a file of [3, hidden] F32 passed check (exit 0).
func TestCheckManifestShapeDTypeLies(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	dir := filepath.Join(t.TempDir(), "dump")
	captureAndDump(t, e, [][]int32{{1, 2, 3}}, []int{1}, capture.WhatStream, dir)
	raw, err := os.ReadFile(filepath.Join(dir, capture.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if pr := CheckPath(dir, CheckOptions{}); pr.Failed() {
		t.Fatalf("the untouched dump fails:\n%s", strings.Join(pr.Lines(), "\n"))
	}
	hidden := e.Dims.Hidden
	file := fmt.Sprintf("[3, %d] F32", hidden)
	for _, c := range []struct {
		name  string
		edit  func(*capture.TensorRecord)
		wants []string
	}{
		{"shape", func(r *capture.TensorRecord) { r.Shape = []int{3, hidden + 1} }, []string{"hidden_states.1 is " + file + " in the file", fmt.Sprintf("records [3, %d] F32", hidden+1)}},
		{"negative", func(r *capture.TensorRecord) { r.Shape = []int{-3, hidden} }, []string{"hidden_states.1 is " + file + " in the file", fmt.Sprintf("records [-3, %d] F32", hidden)}},
		{"dtype", func(r *capture.TensorRecord) { r.DType = "BF16" }, []string{"hidden_states.1 is " + file + " in the file", fmt.Sprintf("records [3, %d] BF16", hidden)}},
	} {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var rec capture.Manifest
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		tr := rec.Sequences[0].Tensors["hidden_states.1"]
		c.edit(&tr)
		seq := m["sequences"].([]any)[0].(map[string]any)
		seq["tensors"].(map[string]any)["hidden_states.1"] = tr
		b, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, capture.ManifestName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		pr := CheckPath(dir, CheckOptions{})
		out := strings.Join(pr.Lines(), "\n")
		if !pr.Failed() {
			t.Errorf("%s: a manifest that lies passes check:\n%s", c.name, out)
			continue
		}
		for _, w := range c.wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s: report does not name %q:\n%s", c.name, w, out)
			}
		}
	}
}
