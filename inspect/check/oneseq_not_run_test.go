package check

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/inspect/capture"
)

// TestOneSeqRuleWhenModelNotRun: checking a capture file with --model and
// a partial load that cannot compute its layers (--load-layers 0-0 for
// layers 0 and 1) skipped the one-sequence rule with "not checked: give
// --model", though --model was given, and so did a file whose values
// match nothing the model computes (random normal values, the model run
// on its ids); the rule now says the model's forward pass did not run on
// the file, or that no entry matches it, and points at the rule that
// says more.
func TestOneSeqRuleWhenModelNotRun(t *testing.T) {
	full := llamaEngine(t)
	dir := filepath.Join(t.TempDir(), "dump")
	captureAndDump(t, full, [][]int32{{1, 5, 7}}, []int{0, 1}, capture.WhatStream, dir)
	d := llamaDims(t)
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: 1, Layers: &model.LayerRange{First: 0, Last: 0}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m, err := capture.ReadManifest(dir)
	if err != nil || len(m.Sequences) != 1 {
		t.Fatalf("%v %+v", err, m)
	}
	r := CheckFile(filepath.Join(dir, m.Sequences[0].File), CheckOptions{Dims: d, Model: targetOf(e)})
	rr, ok := r.Rule(capture.RuleOneSeq)
	if !ok || rr.Status != capture.Skip || strings.Contains(rr.Detail, "give --model") || !strings.Contains(rr.Detail, "--model's forward pass did not run on this file") {
		t.Errorf("one-sequence rule %+v; want a skip saying --model did not run, not to give it", rr)
	}
	x := make([]float32, 3*96)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	p := writeCapture(t, []int64{1, 5, 7}, map[int][]float32{0: x}, 96)
	r = CheckFile(p, CheckOptions{Dims: d, Model: targetOf(full)})
	if mr, _ := r.Rule(capture.RuleMatch); mr.Status != capture.Fail {
		t.Fatalf("premise: random values matched the model: %+v", mr)
	}
	rr, ok = r.Rule(capture.RuleOneSeq)
	if !ok || rr.Status != capture.Skip || strings.Contains(rr.Detail, "give --model") || !strings.Contains(rr.Detail, "no entry matches --model's forward pass") {
		t.Errorf("random values: one-sequence rule %+v; want a skip saying nothing matched, not to give --model", rr)
	}
}
