package check

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestStructureListsAtMostMaxKeys: a safetensors file of 1,000 zero-size
// tensors (an attacker's file had 1.5 million, and check printed a line
// for each) lists its first 256 keys and counts the other 744, by hand:
// 1 line for the dict, 256 for the keys, 1 for the count.
func TestStructureListsAtMostMaxKeys(t *testing.T) {
	var ts []safetensors.Named
	for i := range 1000 {
		ts = append(ts, safetensors.Named{Name: fmt.Sprintf("t%04d", i), T: tensor.New(tensor.F32, 0)})
	}
	p := filepath.Join(t.TempDir(), "many.safetensors")
	if err := safetensors.WriteFile(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	cf, err := readSafetensorsCapture(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := cf.Structure()
	if len(lines) != 258 || lines[0] != "top: dict of 1000" || lines[256] != `  "t0255": tensor [0] f32` || lines[257] != "  … 744 more keys not listed" {
		t.Errorf("%d lines, first %q, 257th %q, last %q", len(lines), lines[0], lines[min(256, len(lines)-1)], lines[len(lines)-1])
	}
	if strings.Contains(strings.Join(lines, "\n"), "t0256") {
		t.Error("key 257 listed")
	}
}
