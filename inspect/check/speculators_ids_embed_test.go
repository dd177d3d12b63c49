package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestSpeculatorsLayerIDsWithEmbeddings: a speculators file of ids 0,2,3,4
// (the embeddings as id 0, then hsdb layers 1,2,3: id k = hsdb layer k-1,
// as capture --format speculators writes them with `capture site
// model.embed_tokens hidden_states`) checked with --layers 2,3,4, the
// file's own ids of its layers, was answered "layer 4 is outside the
// model's hsdb layers 0..3" with no word of the convention, while --layers
// 0,2,3,4 (every id) got the hint. Both now name the ids as the file's
// speculators ids and give the hsdb layers, 1,2,3 (by hand: each id less
// one).
func TestSpeculatorsLayerIDsWithEmbeddings(t *testing.T) {
	const n, ids, hidden = 4, 4, 8
	x := make([]float32, n*ids*hidden)
	for i := range x {
		x[i] = float32(i%89) - 30
	}
	p := filepath.Join(t.TempDir(), "hs_0.safetensors")
	meta := map[string]string{"convention": "speculators", "layer_ids": "0,2,3,4"}
	if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "token_ids", T: tensor.FromI64([]int64{1, 2, 3, 4}, n)}, {Name: "hidden_states", T: tensor.FromF32(x, n, ids, hidden)}}, meta); err != nil {
		t.Fatal(err)
	}
	for _, req := range [][]int{{2, 3, 4}, {0, 2, 3, 4}} {
		r := CheckFile(p, CheckOptions{Layers: req, Dims: &model.Dims{Hidden: hidden, Layers: 4}})
		s, ok := r.Rule(capture.RuleLayerCount)
		want := joinInts(req) + " are this file's speculators ids"
		if !ok || s.Status != capture.Fail || !strings.Contains(s.Detail, want) || !strings.Contains(s.Detail, "--layers 1,2,3") {
			t.Errorf("--layers %s: layer count %+v; want a failure saying %q and --layers 1,2,3", joinInts(req), s, want)
		}
	}
}
