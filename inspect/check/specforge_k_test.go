package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/capture"
)

// TestSpecForgeAuxCount: a SpecForge sample whose aux_hidden_state holds
// 2 layers ([1, len, 2·hidden]) was "valid", although SpecForge's
// Eagle-3 draft asserts hidden_states.size(-1) == hidden_size * 3
// (llama3_eagle.py project_hidden_states: "eagle 3 requires hidden states
// from 3 layers") and its fc is Linear(3·hidden, hidden): the trainer
// cannot read the file. check reads it as the trainer does: a structure
// failure naming the count; 3 layers pass. Written by hsdb's own
// SpecForge writer from the llama fixture (layers 0,1 and 0,1,2).
func TestSpecForgeAuxCount(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, c := range []struct {
		layers []int
		fail   bool
	}{{[]int{0, 1}, true}, {[]int{0, 1, 2}, false}} {
		cp := capture.NewCapturer(e.Tree, e.Dims.Layers)
		if err := cp.AddLayers(c.layers, capture.WhatStream); err != nil {
			t.Fatal(err)
		}
		if err := cp.AddSite("model.norm", "hidden_states"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Prefill([][]int32{{1, 5, 7, 9}}, cp, false); err != nil {
			t.Fatal(err)
		}
		got, reps, err := cp.Result()
		if err != nil {
			t.Fatal(err)
		}
		plan, err := capture.PlanCaptured(capture.FormatSpecForge, cp.List(), capture.WhatStream, e.Dims.Layers)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "sf")
		info := capture.ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name())
		if _, err := capture.Dump(dir, got, reps, capture.DumpInfo{Model: info, Layers: plan.HsdbLayers(), What: capture.WhatStream, Plan: plan}, capture.DumpOptions{}); err != nil {
			t.Fatal(err)
		}
		r := CheckFile(filepath.Join(dir, "rows_0-2000", "data_0.ckpt"), CheckOptions{})
		st, _ := r.Rule(capture.RuleStructure)
		failed := st.Status == capture.Fail && strings.Contains(st.Detail, "aux_hidden_state holds 2 layers")
		if failed != c.fail || (!c.fail && st.Status == capture.Fail) {
			t.Errorf("layers %v: structure %s %q, want failure %v", c.layers, st.Status, st.Detail, c.fail)
		}
	}
}
