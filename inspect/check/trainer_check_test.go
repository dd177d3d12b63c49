package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/modelpath"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

var trainerSeqs = [][]int32{{1, 2, 3, 4, 5, 6, 7}, {8, 9, 10}, {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}}

// writeTrainer runs a capture job writing format f with ids (the format's
// convention) over trainerSeqs and returns the directory.
func writeTrainer(t *testing.T, e *engine.Engine, f capture.Format, ids string) string {
	t.Helper()
	plan, err := capture.PlanLayers(f, ids, e.Dims.Layers, client.ParseLayers)
	if err != nil {
		t.Fatal(err)
	}
	in := &capture.Inputs{Job: capture.JobInfo{InputSHA256: "test", Sequences: len(trainerSeqs)}}
	for i, s := range trainerSeqs {
		in.Seqs = append(in.Seqs, capture.InputSeq{ID: fmt.Sprint(i), IDs: s})
	}
	dir := filepath.Join(t.TempDir(), string(f))
	if _, err := capture.RunCaptureJob(context.Background(), targetOf(e), in, capture.JobOptions{Plan: plan, Out: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTrainerSamplesPassCheck: speculators (ids 0..3: embeddings, then
// every layer's output) and SpecForge (SGLang ids 0..2 plus hidden_state)
// samples of testdata/hf/llama written at tp 1 and 2 pass check with the
// model — as a directory with hsdb's sidecar manifest and file by file
// without it — each entry matching what its format says it is.
func TestTrainerSamplesPassCheck(t *testing.T) {
	d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
	for _, tp := range []int{1, 2} {
		e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: tp})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			f     capture.Format
			ids   string
			file  string
			kinds []string // the claimed kind of each entry's match
		}{
			{capture.FormatSpeculators, "0,1,2,3", "hs_2.safetensors", []string{CandEmbed, "", "", ""}},
			{capture.FormatSpecForge, "0,1,2", "rows_0-2000/data_2.ckpt", []string{"", "", "", CandNormed}},
		} {
			dir := writeTrainer(t, e, c.f, c.ids)
			if pr := CheckPath(dir, CheckOptions{Dims: d, Model: targetOf(e)}); pr.Failed() || len(pr.Files) != 3 {
				t.Fatalf("tp %d %s: check of the directory:\n%s", tp, c.f, strings.Join(pr.Lines(), "\n"))
			}
			r := CheckFile(filepath.Join(dir, c.file), CheckOptions{Dims: d, Model: targetOf(e)})
			if r.Failed() || len(r.Matches) != len(c.kinds) {
				t.Fatalf("tp %d %s alone:\n%s", tp, c.f, strings.Join(r.Lines(), "\n"))
			}
			for i, m := range r.Matches {
				if m.Kind != c.kinds[i] || (m.Kind != "" && !(m.HasClaimed && m.Close)) {
					t.Errorf("tp %d %s entry %s: kind %q, claimed %v close %v", tp, c.f, m.Key, m.Kind, m.HasClaimed, m.Close)
				}
			}
		}
		e.Close()
	}
}

func llamaE(t *testing.T) *engine.Engine {
	t.Helper()
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// rewrite writes a safetensors file holding ts (in order) and metadata.
func rewrite(t *testing.T, path string, ts []safetensors.Named, meta map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(f, ts, meta); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func loadST(t *testing.T, path string) (*tensor.Tensor, *tensor.Tensor, map[string]string) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hs, _ := f.Tensor("hidden_states")
	ids, _ := f.Tensor("token_ids")
	clone := func(x *tensor.Tensor) *tensor.Tensor { // the file's mapping ends with Close
		c := tensor.New(x.DType, x.Shape...)
		copy(c.Data, x.Data)
		return c
	}
	return clone(hs), clone(ids), f.Metadata()
}

// TestSpeculatorsLayoutsNamed: check names what is wrong with a
// speculators file: hidden_states transposed to [n_ids, seq, hidden]
// (layers first), a [n, n, hidden] file whose axis order the shape cannot
// decide, and ids in SGLang's convention labelled as speculators'.
func TestSpeculatorsLayoutsNamed(t *testing.T) {
	e := llamaE(t)
	d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
	dir := writeTrainer(t, e, capture.FormatSpeculators, "1,2,3")
	hs, ids, meta := loadST(t, filepath.Join(dir, "hs_0.safetensors")) // 7 tokens, 3 ids
	n, k, h := hs.Shape[0], hs.Shape[1], hs.Shape[2]
	// [n_ids, seq, hidden]: element (j, r) of the transposed tensor is (r, j) of the original.
	tr := tensor.New(hs.DType, k, n, h)
	rb := h * hs.DType.Size()
	for r := range n {
		for j := range k {
			copy(tr.Data[(j*n+r)*rb:(j*n+r+1)*rb], hs.Data[(r*k+j)*rb:(r*k+j+1)*rb])
		}
	}
	p := filepath.Join(t.TempDir(), "layers_first.safetensors")
	rewrite(t, p, []safetensors.Named{{Name: "hidden_states", T: tr}, {Name: "token_ids", T: ids}}, nil)
	r := CheckFile(p, CheckOptions{Dims: d})
	if x, _ := r.Rule(capture.RuleStructure); x.Status != capture.Fail || !strings.Contains(x.Detail, "[n_ids 3, seq 7, hidden 96], layers first") {
		t.Errorf("layers first: %s %s\n%s", x.Status, x.Detail, strings.Join(r.Lines(), "\n"))
	}
	// [3, 3, 96] beside 3 token ids: undecidable.
	sq := &tensor.Tensor{Shape: []int{3, 3, h}, DType: hs.DType, Data: hs.Data[:3*3*rb]}
	p = filepath.Join(t.TempDir(), "square.safetensors")
	rewrite(t, p, []safetensors.Named{{Name: "hidden_states", T: sq}, {Name: "token_ids", T: tensor.FromI64([]int64{1, 2, 3}, 3)}}, nil)
	r = CheckFile(p, CheckOptions{Dims: d})
	if x, _ := r.Rule(capture.RuleStructure); x.Status != capture.Fail || !strings.Contains(x.Detail, "cannot be told") || len(r.Matches) != 0 {
		t.Errorf("square: %s %s", x.Status, x.Detail)
	}
	// The file's data are speculators ids 1,2,3 (hsdb layers 0,1,2); metadata claiming SGLang's numbering 0,1,2 as speculators ids.
	meta["layer_ids"] = "0,1,2"
	p = filepath.Join(t.TempDir(), "sglang_ids.safetensors")
	rewrite(t, p, []safetensors.Named{{Name: "hidden_states", T: hs}, {Name: "token_ids", T: ids}}, meta)
	r = CheckFile(p, CheckOptions{Dims: d, Model: targetOf(e)})
	if !r.Failed() || !strings.Contains(strings.Join(r.Lines(), "\n"), "a wrong layer-id convention: the ids are SGLang's") {
		t.Errorf("SGLang ids as speculators':\n%s", strings.Join(r.Lines(), "\n"))
	}
}

// TestListIndexKeysWithMetadata: hidden_states.0 and hidden_states.1 are
// list positions when __metadata__ "layers" says they hold layers 1 and 2;
// check labels them from the metadata and the file passes, where the keys
// read as layer numbers would not.
func TestListIndexKeysWithMetadata(t *testing.T) {
	e := llamaE(t)
	d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
	c := capture.NewCapturer(e.Tree, e.Dims.Layers)
	if err := c.AddLayers([]int{1, 2}, ""); err != nil {
		t.Fatal(err)
	}
	seq := []int32{4, 8, 15, 16, 23, 42}
	if _, err := e.Prefill([][]int32{seq}, c, false); err != nil {
		t.Fatal(err)
	}
	got, _, _ := c.Result()
	ids := tensor.FromI64([]int64{4, 8, 15, 16, 23, 42}, 6)
	ts := []safetensors.Named{{Name: "input_ids", T: ids}, {Name: "hidden_states.0", T: got[0].Tensors["hidden_states.1"]}, {Name: "hidden_states.1", T: got[0].Tensors["hidden_states.2"]}}
	p := filepath.Join(t.TempDir(), "list.safetensors")
	rewrite(t, p, ts, map[string]string{"layers": "1,2"})
	r := CheckFile(p, CheckOptions{Dims: d, Model: targetOf(e), Layers: []int{1, 2}})
	if r.Failed() || !strings.Contains(r.Schema, "layers from __metadata__") {
		t.Fatalf("with metadata:\n%s", strings.Join(r.Lines(), "\n"))
	}
	rewrite(t, p, ts, nil)
	if r := CheckFile(p, CheckOptions{Dims: d, Model: targetOf(e)}); !r.Failed() {
		t.Fatalf("without metadata the keys claim layers 0 and 1:\n%s", strings.Join(r.Lines(), "\n"))
	}
}
