package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/capture"
)

// TestDumpReplicasNameTheKey: a tp-2 dump whose manifest records that the
// ranks' copies of hidden_states.1 (by 0.2) and hidden_states.2 (by 0.05)
// differed was failed with "rank 1 differs from rank 0 by 0.2 at capture",
// naming no tensor (and, on a tie, whichever record the map gave first).
// The rule names the worst key and the other failing ones.
func TestDumpReplicasNameTheKey(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	dir := filepath.Join(t.TempDir(), "dump")
	captureAndDump(t, e, [][]int32{{1, 5, 7, 9}}, []int{0, 1, 2}, capture.WhatStream, dir)
	mp := filepath.Join(dir, "manifest.json")
	raw, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["replicas"] = map[string]any{
		"hidden_states.0": map[string]any{"ranks": 2, "max_rel_diff": 0, "worst_rank": 0, "ok": true},
		"hidden_states.1": map[string]any{"ranks": 2, "max_rel_diff": 0.2, "worst_rank": 1, "ok": false},
		"hidden_states.2": map[string]any{"ranks": 2, "max_rel_diff": 0.05, "worst_rank": 1, "ok": false},
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, out, 0o644); err != nil {
		t.Fatal(err)
	}
	pr := CheckPath(dir, CheckOptions{})
	text := strings.Join(pr.Lines(), "\n")
	want := "replicas equal    hidden_states.1: rank 1 differs from rank 0 by 0.2 at capture; also hidden_states.2"
	if !pr.Failed() || !strings.Contains(text, want) {
		t.Errorf("want a failure with %q:\n%s", want, text)
	}
}
