package repl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hsdb/engine/enginetest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/safetensors"
	"hsdb/inspect/capture"
	hsdbg "hsdb/inspect/debug"
)

// newHFFake drives a Term over the HF llama fixture (testdata/hf/llama), at
// world size tp, whose reference.safetensors holds HF's hidden states.
func newHFFake(t *testing.T, tp int) *fakeTerm {
	t.Helper()
	e, err := engine.Open("../testdata/hf/llama", engine.Options{TP: tp})
	if err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	f := newFakeOn(t, hsdbg.New(e), buf)
	t.Cleanup(f.Close)
	return f
}

// hfBatch returns the `input` line of the fixture's three sequences and
// the reference file (testdata/README.md: lengths 7, 3, 12).
func hfBatch(t *testing.T) (string, *safetensors.File, []int) {
	ref, err := safetensors.Open("../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	ids, _ := ref.Tensor("input_ids")
	lens := []int{7, 3, 12}
	var parts []string
	off := 0
	for _, n := range lens {
		var p []string
		for j := off; j < off+n; j++ {
			p = append(p, fmt.Sprint(ids.Int(j)))
		}
		parts = append(parts, "ids "+strings.Join(p, ","))
		off += n
	}
	return "input " + strings.Join(parts, " ; "), ref, lens
}

// TestCaptureDumpCheckREPL: capture the stream of layers 0 and 2 at tp 2,
// run, dump: each file's hidden_states.0 equals HF's output_hidden_states[1]
// and hidden_states.2 HF's layer-2 output (reference.safetensors) within
// 1e-5 of max|x|; `check` of the dump passes with layer matching, `capture
// clear` empties the list, and a second dump into the same directory is
// refused without --force.
func TestCaptureDumpCheckREPL(t *testing.T) {
	f := newHFFake(t, 2)
	in, ref, lens := hfBatch(t)
	f.Exec(in)
	f.AssertExec("capture layers 0,2", "hidden_states.0", "model.layers.2", "nothing captured yet")
	f.Exec("run")
	f.AssertExec("capture list", "captured: seq 0: 7 tokens, seq 1: 3 tokens, seq 2: 12 tokens")
	dir := filepath.Join(t.TempDir(), "dump")
	f.AssertExec("dump "+dir, "dumped 3 sequences (7, 3, 12 tokens)", "pass  replicas equal")
	m, err := capture.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i, n := range lens {
		sf, err := safetensors.Open(filepath.Join(dir, m.Sequences[i].File))
		if err != nil {
			t.Fatal(err)
		}
		for l, name := range map[int]string{0: "hf_hidden_states.1", 2: "layer.2"} {
			got, _ := sf.Tensor(fmt.Sprintf("hidden_states.%d", l))
			want, _ := ref.RowsView(name, off, off+n)
			if err := enginetest.CheckClose(got.F32(), want.ToF32(), 1e-5); err != nil {
				t.Errorf("sequence %d layer %d vs HF %s: %v", i, l, name, err)
			}
		}
		sf.Close()
		off += n
	}
	f.AssertExec("check "+dir, "pass  matches model", "valid")
	f.AssertError("dump "+dir, "dump exists: it holds an hsdb dump in hsdb format: 3 sequences of layers 0,2 (stream)")
	f.AssertExec("dump "+dir+" --force --dtype bf16", ", bf16\n")
	f.AssertExec("capture clear", "no captures")
	f.AssertError("dump "+dir+" --force", "nothing is captured")
}

// TestCaptureWhileStopped: captures added at a breakpoint record the sites
// the pass has yet to visit; `check` refuses to run the model while the
// pass is stopped and works once it has ended.
func TestCaptureWhileStopped(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1")
	f.AssertExec("run", "model.layers.1")
	f.Exec("capture layers 3 --what residual")
	f.AssertError("check ../testdata/captures/good.safetensors", "a forward pass is stopped")
	f.Exec("continue")
	g := reference(t, 2, "model.layers.3")
	dir := filepath.Join(t.TempDir(), "d")
	f.Exec("dump " + dir) // f32, as captured: the file holds the recorded values
	got := firstDumpTensor(t, dir, "hidden_states.3")
	rows := got.F32()
	want := g.got["residual"][0].F32()[:len(rows)] // sequence 0 is rows 0..5 of the batch
	if err := enginetest.CheckClose(rows, want, 0); err != nil {
		t.Fatalf("captured residual of layer 3 differs from an independent hook's: %v", err)
	}
	f.Exec("delete")
	f.assertVerdictFails("check ../testdata/captures/good.safetensors --no-model", "pass  structure")
}

// TestCheckDiffREPL: check and diff of the off-by-one fixture name the
// shift; the latent fixture is explained in the model's terms.
func TestCheckDiffREPL(t *testing.T) {
	f := newHFFake(t, 1)
	f.assertVerdictFails("check ../testdata/captures/shifted_by_one.pt --layers 0,1,2",
		"labelled layer 2, matches stream of layer 1 (cos 1.000000", "  verdict: problems found\n")
	f.assertVerdictFails("diff ../testdata/captures/shifted_by_one.pt --layers 0,1,2", "first departure: layer 0 (hidden_states[0]) from token 0")
	f.AssertExec("diff ../testdata/captures/good_speculators.pt --layers 0,1,2", "no departure", "  verdict: valid\n")
	f.AssertError("check ../testdata/captures/evil_global.pt", "posix.system")
	f.opts.json = true
	out, failed := f.execVerdict("check ../testdata/captures/rank_shard.pt --layers 0,1,2")
	f.opts.json = false
	var res map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil || !failed {
		t.Fatalf("check --json of a failing file: failed %v, %v: %q", failed, err, out)
	}
	r := res["result"].(map[string]any)
	if r["failed"] != true || !strings.Contains(fmt.Sprint(r["lines"]), "48 = hidden_size / 2") {
		t.Fatalf("%v", r)
	}
}

var _ = os.Remove

// TestDumpTrainerFormatsREPL: `dump --format speculators` of captured
// layers 0 and 2 plus the embeddings writes hs_{idx}.safetensors whose
// hidden_states[:, j] are HF's output_hidden_states[0], layer.0 and layer.2
// (speculators ids 0, 1, 3) within 1e-5 (--dtype f32); `dump --format
// specforge` asks for the final norm until `capture site model.norm
// hidden_states` is on, then its data_{idx}.ckpt passes check with the
// model; both name what is missing or wrong before writing anything.
func TestDumpTrainerFormatsREPL(t *testing.T) {
	f := newHFFake(t, 1)
	in, ref, lens := hfBatch(t)
	f.Exec(in)
	f.Exec("capture site model.embed_tokens hidden_states")
	f.Exec("capture layers 0,2")
	f.Exec("run")
	dir := filepath.Join(t.TempDir(), "hs")
	f.AssertError("dump "+dir+" --format eagle", `--format "eagle": want hsdb, speculators or specforge`)
	f.AssertError("dump "+dir+" --format specforge", "capture site model.norm hidden_states")
	f.AssertExec("dump "+dir+" --format speculators --dtype f32", "dumped 3 sequences")
	off := 0
	for i, n := range lens {
		sf, err := safetensors.Open(filepath.Join(dir, fmt.Sprintf("hs_%d.safetensors", i)))
		if err != nil {
			t.Fatal(err)
		}
		hs, _ := sf.Tensor("hidden_states")
		if fmt.Sprint(hs.Shape) != fmt.Sprintf("[%d 3 96]", n) {
			t.Fatalf("hs_%d: hidden_states %v", i, hs.Shape)
		}
		v := hs.F32()
		for j, name := range []string{"hf_hidden_states.0", "layer.0", "layer.2"} {
			var got []float32
			for r := range n {
				got = append(got, v[(r*3+j)*96:(r*3+j+1)*96]...)
			}
			want, _ := ref.RowsView(name, off, off+n)
			if err := enginetest.CheckClose(got, want.ToF32(), 1e-5); err != nil {
				t.Errorf("hs_%d hidden_states[:, %d] vs HF %s: %v", i, j, name, err)
			}
		}
		sf.Close()
		off += n
	}
	f.Exec("capture site model.norm hidden_states")
	f.Exec("run")
	sfDir := filepath.Join(t.TempDir(), "sf")
	// Two aux layers: SpecForge's draft reads three (TestSpecForgeAuxRefused).
	f.AssertError("dump "+sfDir+" --format specforge", "specforge ids 0,2 (hsdb layers 0,2): 2 aux layers would make aux_hidden_state [1, len, 2·hidden], which SpecForge cannot train on: it reads exactly 3")
	if _, err := os.Stat(sfDir); !os.IsNotExist(err) {
		t.Errorf("the refused dump left %s: %v", sfDir, err)
	}
	f.Exec("capture layers 1")
	f.Exec("run")
	sfDir3 := filepath.Join(t.TempDir(), "sf3")
	f.AssertExec("dump "+sfDir3+" --format specforge", "dumped 3 sequences")
	f.AssertExec("check "+sfDir3, "pass  matches model", "3 files: 3 valid")
}
