package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/capture"
)

// TestNoCandidateNamed: a file whose width no tensor of the model's
// forward pass has (the llama fixture's [len, 96] against stories260K,
// hidden_size 64) was reported "it is closest to  ;" and "closest  , cos
// 0.000000": an empty explanation printed as if it were one. The report
// says that nothing of the forward pass has that width.
func TestNoCandidateNamed(t *testing.T) {
	llama, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer llama.Close()
	dir := filepath.Join(t.TempDir(), "dump")
	captureAndDump(t, llama, [][]int32{{1, 5, 7, 9}}, []int{0, 2}, capture.WhatStream, dir)
	stories, err := engine.Open("../../testdata/stories260K/stories260K.bin", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer stories.Close()
	r := CheckFile(filepath.Join(dir, "seq_000000.safetensors"), CheckOptions{Dims: stories.Dims, Model: targetOf(stories)})
	diff, _ := r.DiffLines()
	text := strings.Join(append(r.Lines(), diff...), "\n")
	for _, bad := range []string{"closest to  ", "closest  ,", "closest:  ", "(cos 0.000000, max|Δ| 0)"} {
		if strings.Contains(text, bad) {
			t.Errorf("report holds %q:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "no tensor of hsdb's forward pass has width 96") {
		t.Errorf("report does not say no tensor has width 96:\n%s", text)
	}
}
