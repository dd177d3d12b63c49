package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestKeyedLayerOrder: a file keyed by layer (hsdb's hidden_states.{layer})
// whose metadata records its layers' order ("layers": "2,0,1", as hsdb
// writes a capture of --layers 2,0,1) was checked against --layers as a
// set, so --layers 0,1,2 or 1,2,0 passed though an EAGLE-3 trainer
// concatenates the aux layers in order. The order is the metadata's:
// another order fails naming both; the same order passes; other layers
// still fail as other layers; a keyed file without metadata is still
// compared as a set (TestLayerCountOrder). Orders by hand.
func TestKeyedLayerOrder(t *testing.T) {
	dir := t.TempDir()
	ids := tensor.FromI64([]int64{1, 2, 3}, 3)
	row := func(v float32) *tensor.Tensor {
		x := make([]float32, 3*4)
		for i := range x {
			x[i] = v + float32(i)
		}
		return tensor.FromF32(x, 3, 4)
	}
	p := filepath.Join(dir, "seq.safetensors")
	ts := []safetensors.Named{{Name: "input_ids", T: ids}, {Name: "hidden_states.2", T: row(300)}, {Name: "hidden_states.0", T: row(1)}, {Name: "hidden_states.1", T: row(20)}}
	if err := safetensors.WriteFile(p, ts, map[string]string{"hsdb": "hsdb-capture-dump/1", "layers": "2,0,1", "what": "stream"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		layers []int
		status capture.Status
		want   string
	}{
		{[]int{2, 0, 1}, capture.Pass, "3 layers: 2,0,1"},
		{[]int{0, 1, 2}, capture.Fail, "requested 0,1,2: the same layers in another order: the file's metadata records 2,0,1 in this order"},
		{[]int{1, 2, 0}, capture.Fail, "requested 1,2,0: the same layers in another order: the file's metadata records 2,0,1 in this order"},
		{[]int{0, 1, 3}, capture.Fail, "labelled layers 0,1,2, requested 0,1,3"},
	} {
		r := CheckFile(p, CheckOptions{Layers: c.layers})
		x, ok := r.Rule(capture.RuleLayerCount)
		if !ok || x.Status != c.status || !strings.Contains(x.Detail, c.want) {
			t.Errorf("--layers %v: %+v, want %v %q", c.layers, x, c.status, c.want)
		}
	}
}

// TestDumpManifestLayerOrder: a dump of the llama fixture captured as
// layers 2,0,1 (manifest capture.layers [2,0,1], each file's metadata
// "2,0,1") passes check, and fails for --layers 0,1,2 naming the file's
// order. Its manifest rewritten to layers [0,1,2] (the files unchanged)
// passed: check took the manifest's layers as the request and compared
// them with the keys as a set. A manifest that disagrees with the files'
// own record is now an error naming both, whatever --layers says.
func TestDumpManifestLayerOrder(t *testing.T) {
	_, dir := llamaDump(t, []int{2, 0, 1})
	layerRule := func(opts CheckOptions) RuleResult {
		t.Helper()
		pr := CheckPath(dir, opts)
		if pr.Err != nil || len(pr.Files) != 1 {
			t.Fatalf("check: %v, %d files", pr.Err, len(pr.Files))
		}
		x, _ := pr.Files[0].Rule(capture.RuleLayerCount)
		return x
	}
	if x := layerRule(CheckOptions{}); x.Status != capture.Pass || x.Detail != "3 layers: 2,0,1" {
		t.Errorf("the dump as written: %+v", x)
	}
	if x := layerRule(CheckOptions{Layers: []int{0, 1, 2}}); x.Status != capture.Fail ||
		!strings.Contains(x.Detail, "requested 0,1,2: the same layers in another order: the file's metadata records 2,0,1 in this order") {
		t.Errorf("--layers 0,1,2: %+v", x)
	}
	mp := filepath.Join(dir, "manifest.json")
	raw, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["capture"].(map[string]any)["layers"] = []int{0, 1, 2}
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "the dump's manifest records layers 0,1,2, the file's metadata records layers 2,0,1: the same layers in another order"
	for _, layers := range [][]int{nil, {0, 1, 2}, {2, 0, 1}} {
		if x := layerRule(CheckOptions{Layers: layers}); x.Status != capture.Fail || !strings.Contains(x.Detail, want) {
			t.Errorf("manifest layers [0,1,2], --layers %v: %+v, want FAIL %q", layers, x, want)
		}
	}
}

// TestFormatIDsClash: a trainer-format dump's manifest holds its layers
// twice, as hsdb layers (capture.layers) and in the format's ids
// (format_layer_ids); SpecForge's samples name no layers, so a manifest
// whose two records disagree (layers reordered by hand) went unnoticed.
// Hsdb layers of the ids by hand: SpecForge's SGLang id s = layer s;
// speculators' id k = layer k-1, id 0 the embeddings (none).
func TestFormatIDsClash(t *testing.T) {
	for _, c := range []struct {
		info capture.CaptureInfo
		want string
	}{
		{capture.CaptureInfo{Format: "specforge", Layers: []int{0, 1, 2}, FormatIDs: []int{0, 1, 2}}, ""},
		{capture.CaptureInfo{Format: "specforge", Layers: []int{2, 0, 1}, FormatIDs: []int{0, 1, 2}}, "the manifest's layers 2,0,1 are not its specforge ids 0,1,2, which are hsdb layers 0,1,2 in file order"},
		{capture.CaptureInfo{Format: "speculators", Layers: []int{0, 1, 2}, FormatIDs: []int{0, 1, 2, 3}}, ""},
		{capture.CaptureInfo{Format: "speculators", Layers: []int{1, 29, 57}, FormatIDs: []int{2, 30, 58}}, ""},
		{capture.CaptureInfo{Format: "speculators", Layers: []int{57, 1, 29}, FormatIDs: []int{2, 30, 58}}, "the manifest's layers 57,1,29 are not its speculators ids 2,30,58, which are hsdb layers 1,29,57 in file order"},
		{capture.CaptureInfo{Layers: []int{2, 0, 1}}, ""},
	} {
		got := formatIDsClash(c.info)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.info, got, c.want)
		}
	}
}
