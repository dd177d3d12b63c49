package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/modelpath"
	"hsdb/inspect/capture"
)

// captureAndDump runs seqs through e with layers captured and dumps them.
func captureAndDump(t *testing.T, e *engine.Engine, seqs [][]int32, layers []int, what, dir string) *capture.Manifest {
	t.Helper()
	c := capture.NewCapturer(e.Tree, e.Dims.Layers)
	if err := c.AddLayers(layers, what); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prefill(seqs, c, false); err != nil {
		t.Fatal(err)
	}
	got, reps, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	info := capture.ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name())
	m, err := capture.Dump(dir, got, reps, capture.DumpInfo{Model: info, Layers: layers, What: what}, capture.DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// llamaDump opens the llama fixture at --tp 1 (closed when the test ends)
// and dumps one sequence 1, 5, 7, 9 of layers (in that capture order) as
// the stream into a new directory, which it returns with the engine.
func llamaDump(t *testing.T, layers []int) (*engine.Engine, string) {
	return llamaDumpOf(t, [][]int32{{1, 5, 7, 9}}, layers)
}

// llamaDumpOf is llamaDump of the sequences seqs.
func llamaDumpOf(t *testing.T, seqs [][]int32, layers []int) (*engine.Engine, string) {
	t.Helper()
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	dir := filepath.Join(t.TempDir(), "dump")
	captureAndDump(t, e, seqs, layers, capture.WhatStream, dir)
	return e, dir
}

// TestDumpPassesCheck: a dump of every layer's stream of testdata/hf/llama
// for three sequences of lengths 7, 3 and 12, written at tp 1 and
// 2, passes check with the model (every rule, layer matching included).
func TestDumpPassesCheck(t *testing.T) {
	seqs := [][]int32{{1, 2, 3, 4, 5, 6, 7}, {8, 9, 10}, {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}}
	for _, tp := range []int{1, 2} {
		t.Run(fmt.Sprintf("tp%d", tp), func(t *testing.T) {
			e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: tp})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			dir := filepath.Join(t.TempDir(), "dump")
			captureAndDump(t, e, seqs, []int{0, 1, 2}, capture.WhatStream, dir)
			d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
			if pr := CheckPath(dir, CheckOptions{Dims: d, Model: targetOf(e)}); pr.Failed() {
				t.Fatalf("check of the dump:\n%s", strings.Join(pr.Lines(), "\n"))
			}
		})
	}
}

// TestDumpResidualChecksAlone: a dump of the residual half, checked file by
// file without its manifest, is judged against the residual (its metadata
// says what it holds), and against nothing else.
func TestDumpResidualChecksAlone(t *testing.T) {
	e := llamaEngine(t)
	dir := filepath.Join(t.TempDir(), "d")
	m := captureAndDump(t, e, [][]int32{{5, 6, 7, 8}, {9, 10, 11}}, []int{0, 2}, capture.WhatResidual, dir)
	d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
	r := CheckFile(filepath.Join(dir, m.Sequences[1].File), CheckOptions{Dims: d, Model: targetOf(e)})
	if r.Failed() || len(r.Matches) != 2 || r.Matches[1].Claimed.Kind != CandResidual || !r.Matches[1].Close {
		t.Fatalf("%s", strings.Join(r.Lines(), "\n"))
	}
	r = CheckFile(filepath.Join(dir, m.Sequences[1].File), CheckOptions{Dims: d, Model: targetOf(e), What: capture.WhatStream})
	if x, _ := r.Rule(capture.RuleMatch); x.Status != capture.Fail {
		t.Fatalf("claimed stream: %s %s", x.Status, x.Detail)
	}
}

// TestDumpManifestSizesChecked: a dump manifest whose model.dims.hidden_size
// is -5 or 0, or whose capture.layers holds -1, is refused as an invalid
// manifest naming the field; a hidden_size of -5 read as "unknown" and
// check passed the dump with no width checked.
func TestDumpManifestSizesChecked(t *testing.T) {
	_, dir := llamaDump(t, []int{1})
	p := filepath.Join(dir, capture.ManifestName)
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ old, new, want string }{
		{`"hidden_size": 96`, `"hidden_size": -5`, "model.dims.hidden_size is -5, want a size of the model"},
		{`"hidden_size": 96`, `"hidden_size": 0`, "model.dims.hidden_size is 0, want a size of the model"},
		{`"layers": [`, `"layers": [-1, `, "capture.layers[0] is -1, want a decoder layer index"},
	} {
		if !strings.Contains(string(orig), c.old) {
			t.Fatalf("manifest has no %s:\n%s", c.old, orig)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(orig), c.old, c.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		r := CheckPath(dir, CheckOptions{})
		if !r.Failed() || !strings.Contains(strings.Join(r.Lines(), "\n"), c.want) {
			t.Errorf("%s: want a refusal naming %q, got\n%s", c.new, c.want, strings.Join(r.Lines(), "\n"))
		}
	}
}
