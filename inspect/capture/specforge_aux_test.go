package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecForgeAuxRefused: a SpecForge dump of four aux layers was written
// with a note, and hsdb's own check then failed it: SpecForge trains on
// exactly three (its draft's fc is Linear(3·target_hidden_size, hidden)
// and project_hidden_states asserts the width,
// specforge/modeling/draft/llama3_eagle.py; its config refuses
// aux_hidden_state_layer_ids of another count,
// specforge/application/planning.py). Every way a SpecForge dump is made
// now refuses another count before anything is written: --layers
// (PlanLayers), the REPL's captured layers (PlanCaptured) and a plan built
// by hand (CreateDump). By hand for 61 decoder layers (DeepSeek-V3):
// EAGLE-3's SGLang ids are 1, 61/2-1 = 29, 61-4 = 57.
func TestSpecForgeAuxRefused(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []string // in the error; nil: accepted
	}{
		{"1,29,57,60", []string{"specforge ids 1,29,57,60 (hsdb layers 1,29,57,60)", "4 aux layers would make aux_hidden_state [1, len, 4·hidden]", "reads exactly 3 ([1, len, 3·hidden]", "--layers with three SGLang ids", "EAGLE-3's for 61 decoder layers: 1,29,57"}},
		{"57,1", []string{"specforge ids 1,57 ", "2 aux layers"}},
		{"57,1,29", nil},
		{"eagle3", nil},
	} {
		p, err := PlanLayers(FormatSpecForge, c.spec, 61, parseInts)
		if c.want == nil {
			if err != nil || len(p.IDs) != 3 {
				t.Errorf("--layers %s: %v, %v; want three ids accepted", c.spec, p, err)
			}
			continue
		}
		if !errors.Is(err, ErrFormat) {
			t.Errorf("--layers %s: %v, want ErrFormat", c.spec, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("--layers %s: %v\nwant %q in it", c.spec, err, w)
			}
		}
	}

	// The REPL: capture layers eagle3 records hsdb layers 1, 29, 57, 60;
	// dump --format specforge of them is refused, saying how to capture three.
	var specs []CaptureSpec
	for _, l := range []int{1, 29, 57, 60} {
		specs = append(specs, CaptureSpec{Layer: l})
	}
	specs = append(specs, CaptureSpec{Layer: -1, Key: NormKey})
	_, err := PlanCaptured(FormatSpecForge, specs, WhatStream, 61)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "specforge ids 1,29,57,60") || !strings.Contains(err.Error(), "`capture clear`, `capture layers A,B,C`") {
		t.Errorf("PlanCaptured of 4 layers: %v", err)
	}
	if _, err := PlanCaptured(FormatSpecForge, append(specs[:0:0], specs[0], specs[1], specs[2], specs[4]), WhatStream, 61); err != nil {
		t.Errorf("PlanCaptured of 3 layers: %v", err)
	}

	// A plan made by hand reaches CreateDump: refused, nothing written
	// beside the destination (no lock, no staging directory).
	parent := t.TempDir()
	dir := filepath.Join(parent, "sf")
	plan := &Plan{Format: FormatSpecForge, IDs: []int{0, 1, 2, 3}, Srcs: []Source{{Layer: 0}, {Layer: 1}, {Layer: 2}, {Layer: 3}, {Layer: -1, Norm: true}}}
	info := DumpInfo{Model: ModelInfo{Dims: map[string]int{"hidden_size": 8, "num_hidden_layers": 5}}, Layers: plan.HsdbLayers(), What: WhatStream, Plan: plan}
	w, err := CreateDump(dir, info, DumpOptions{})
	if err == nil {
		w.Abort()
		t.Fatal("CreateDump of a 4-aux SpecForge plan: no error")
	}
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "dump "+dir+": ") || !strings.Contains(err.Error(), "specforge ids 0,1,2,3") {
		t.Errorf("CreateDump: %v", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("the refused dump left %v in %s", ents, parent)
	}
}
