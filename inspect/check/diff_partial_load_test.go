package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/inspect/capture"
)

// TestDiffPartialLoad: `hsdb diff FILE --model M --load-layers
// 0-0` on a capture of layers 0 and 1 reported layer 1 as departing
// ("cannot be the layer's output"), and --load-layers 1-2 compared against
// layers fed the embeddings: the capture was blamed for hsdb's own partial
// load. Now nothing is compared and the file is not judged (exit 2), with
// the reason; a load from layer 0 that holds every captured layer still
// compares (and passes).
func TestDiffPartialLoad(t *testing.T) {
	full := llamaEngine(t)
	dir := filepath.Join(t.TempDir(), "dump")
	captureAndDump(t, full, [][]int32{{1, 5, 7}, {1, 9}}, []int{0, 1}, capture.WhatStream, dir)
	d := llamaDims(t)
	for _, c := range []struct {
		load    model.LayerRange
		verdict Verdict
		want    string
	}{
		{model.LayerRange{First: 0, Last: 0}, VerdictUnreadable, "hidden_states.1 is labelled layer 1, but the model loads only decoder layers 0-0"},
		{model.LayerRange{First: 1, Last: 2}, VerdictUnreadable, "layer 1 receives the embeddings instead of layer 0's output"},
		{model.LayerRange{First: 0, Last: 1}, VerdictValid, ""},
	} {
		e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: 1, Layers: &c.load})
		if err != nil {
			t.Fatal(err)
		}
		pr := CheckPath(dir, CheckOptions{Dims: d, Model: targetOf(e)})
		e.Close()
		text := strings.Join(pr.Lines(), "\n")
		if v := pr.Verdict(); v != c.verdict || !strings.Contains(text, c.want) {
			t.Errorf("--load-layers %d-%d: verdict %v, want %v with %q:\n%s", c.load.First, c.load.Last, v, c.verdict, c.want, text)
		}
		if c.verdict != VerdictValid && !strings.Contains(text, "0 valid, 0 invalid, 0 unreadable, 2 not compared") {
			t.Errorf("--load-layers %d-%d: the summary does not count the files as not compared:\n%s", c.load.First, c.load.Last, text)
		}
	}
}
