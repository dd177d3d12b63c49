package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestDumpShapeUsesManifestHidden: checking an hsdb dump without --model
// said "every entry [5, 48] (hidden_size unknown: give --model)" and
// passed the shape rule for a file whose entries are one rank's column
// shard (width 48 of the llama fixture's hidden_size 96, tp 2), though the
// dump's manifest records hidden_size 96. The shape rule now takes the
// manifest's hidden_size and names it; an untouched file passes with it.
func TestDumpShapeUsesManifestHidden(t *testing.T) {
	_, dir := llamaDumpOf(t, [][]int32{{1, 5, 7, 9, 11}, {1, 20, 30}}, []int{0, 2})
	shard := make([]float32, 5*48)
	for i := range shard {
		shard[i] = float32(i%7) - 3
	}
	err := safetensors.WriteFile(filepath.Join(dir, "seq_000000.safetensors"), []safetensors.Named{
		{Name: "input_ids", T: tensor.FromI64([]int64{1, 5, 7, 9, 11}, 5)},
		{Name: "hidden_states.0", T: tensor.FromF32(shard, 5, 48)},
		{Name: "hidden_states.2", T: tensor.FromF32(shard, 5, 48)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pr := CheckPath(dir, CheckOptions{})
	if len(pr.Files) != 2 {
		t.Fatalf("%d files", len(pr.Files))
	}
	x, _ := pr.Files[0].Rule(capture.RuleShape)
	if want := "hidden_states.0 has width 48, the manifest's hidden_size = 96"; x.Status != capture.Fail || !strings.Contains(x.Detail, want) {
		t.Errorf("the shard file: %+v, want FAIL with %q", x, want)
	}
	x, _ = pr.Files[1].Rule(capture.RuleShape)
	if want := "every entry [3, 96] = [len(input_ids), the manifest's hidden_size]"; x.Status != capture.Pass || x.Detail != want {
		t.Errorf("the untouched file: %+v, want pass %q", x, want)
	}
}
