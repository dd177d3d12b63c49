package repl

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/inspect/capture"
)

// TestKillDecodeStepThenGenCapturesOnce: `kill` at a stop inside a decode
// step, then `gen`, ran that step again at the same positions, and the
// captures appended it a second time: layers 1 and 2 (passed before the
// stop at layer 3) held the aborted attempt's rows and the new ones, and
// the dump of seq 0 = [1, 2] + 2 generated tokens wrote input_ids
// [1, 2, 419, 419, 432] with five rows per layer — and passed its own
// validation. Now each sequence holds every position once: input_ids are
// the prompt and two generated tokens, those of a session that never
// killed a step, and every layer's rows equal that session's, to the bit.
func TestKillDecodeStepThenGenCapturesOnce(t *testing.T) {
	prompts := [][]int64{{1, 403, 407, 261, 378, 365}, {1, 400, 281, 350}}
	keys := []string{"hidden_states.1", "hidden_states.2"} // both before the stop: the dump validated

	// The reference: the same batch and captures, two decode steps, no abort.
	refDir := uninterruptedDump(t, 2, batchCmd, "1,2", 2)

	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("capture layers 1,2")
	f.Exec("run")
	f.Exec("break layers.3")
	f.AssertExec("gen 1", "step 1 (decode)")
	f.AssertExec("kill", "aborted")
	f.AssertExec("gen 1", "step 1 (decode)") // the same step again, at the same positions
	f.AssertExec("kill", "aborted")
	f.Exec("delete")
	f.Exec("gen 2")
	dir := filepath.Join(t.TempDir(), "d")
	f.AssertExec("dump "+dir, "dumped 2 sequences (8, 6 tokens)")

	for i, p := range prompts {
		got, want := dumpSeq(t, dir, i), dumpSeq(t, refDir, i)
		ids := tensorInts(t, got, "input_ids")
		refIDs := tensorInts(t, want, "input_ids")
		// By hand: the prompt, then two generated tokens, each once.
		if len(ids) != len(p)+2 || !slices.Equal(ids[:len(p)], p) || !slices.Equal(ids, refIDs) {
			t.Fatalf("seq %d: input_ids %v, want the prompt %v and the 2 generated tokens %v", i, ids, p, refIDs[len(p):])
		}
		for _, k := range keys {
			g, err := got.Tensor(k)
			if err != nil {
				t.Fatal(err)
			}
			w, err := want.Tensor(k)
			if err != nil {
				t.Fatal(err)
			}
			if g.Rows() != len(ids) || !slices.Equal(g.Shape, w.Shape) || len(g.Data) == 0 || !bytes.Equal(g.Data, w.Data) {
				t.Fatalf("seq %d %s: %v rows differ from the uninterrupted session's %v", i, k, g.Shape, w.Shape)
			}
		}
	}
}

// TestFailedEditStepThenGenCapturesOnce: a persistent edit of row 1 made
// for a two-sequence batch no longer applies to a one-sequence batch, so
// each `gen 1` there aborted its decode step at layers.2 after layers 0
// and 1 had run; the captures kept layer 1's rows of both attempts, and
// after `delete edits` and `gen 2` the dump refused "hidden_states.2 has 4
// rows for 6 tokens: nothing was captured for its last 2". Now it holds
// the prompt [1, 2] and two generated tokens, with the rows of a session
// that ran the same two steps without the failed attempts.
func TestFailedEditStepThenGenCapturesOnce(t *testing.T) {
	refDir := uninterruptedDump(t, 2, "input ids 1,2", "1,2,4", 2)

	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("capture layers 1,2,4")
	f.Exec("break layers.2")
	f.Exec("run")
	f.Exec("continue")
	f.AssertExec("gen 1", "step 1 (decode)")
	f.Exec("set var stream[1] = 5 --persist")
	f.Exec("continue")
	f.Exec("input ids 1,2")
	f.Exec("run")
	f.Exec("continue")
	f.AssertError("gen 1", "no longer applies")
	f.AssertError("gen 1", "no longer applies")
	f.Exec("delete edits")
	f.Exec("delete")
	f.Exec("gen 2")
	dir := filepath.Join(t.TempDir(), "d")
	f.AssertExec("dump "+dir, "dumped 1 sequence (4 tokens)")

	got, want := dumpSeq(t, dir, 0), dumpSeq(t, refDir, 0)
	ids, refIDs := tensorInts(t, got, "input_ids"), tensorInts(t, want, "input_ids")
	if len(ids) != 4 || ids[0] != 1 || ids[1] != 2 || !slices.Equal(ids, refIDs) {
		t.Fatalf("input_ids %v, want [1 2] and the 2 generated tokens of %v", ids, refIDs)
	}
	for _, k := range []string{"hidden_states.1", "hidden_states.2", "hidden_states.4"} {
		g, err := got.Tensor(k)
		if err != nil {
			t.Fatal(err)
		}
		w, err := want.Tensor(k)
		if err != nil {
			t.Fatal(err)
		}
		if g.Rows() != 4 || len(g.Data) == 0 || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("%s: %v rows differ from the uninterrupted session's %v", k, g.Shape, w.Shape)
		}
	}
}

// openSeq opens a dump's sequence file, closed when the test ends.
func openSeq(t *testing.T, dir, name string) *safetensors.File {
	t.Helper()
	sf, err := safetensors.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Close() })
	return sf
}

// uninterruptedDump runs the reference the kill/gen tests compare with:
// a session of tp ranks given input, capturing layers, that runs the
// prefill and gen steps without a stop, dumped to the directory returned.
func uninterruptedDump(t *testing.T, tp int, input, layers string, gen int) string {
	t.Helper()
	ref := newFake(t, tp)
	ref.Exec(input)
	ref.Exec("capture layers " + layers)
	ref.Exec("run")
	ref.Exec(fmt.Sprintf("gen %d", gen))
	dir := filepath.Join(t.TempDir(), "ref")
	ref.Exec("dump " + dir)
	return dir
}

// dumpSeq opens sequence i of the dump in dir (its manifest's file).
func dumpSeq(t *testing.T, dir string, i int) *safetensors.File {
	t.Helper()
	m, err := capture.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if i >= len(m.Sequences) {
		t.Fatalf("%s: %d sequences, want sequence %d", dir, len(m.Sequences), i)
	}
	return openSeq(t, dir, m.Sequences[i].File)
}

// tensorInts reads an integer tensor of sf as int64s.
func tensorInts(t *testing.T, sf *safetensors.File, name string) []int64 {
	t.Helper()
	x, err := sf.Tensor(name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, x.Numel())
	for i := range out {
		out[i] = x.Int(i)
	}
	return out
}

// TestKillDecodeStepDropsItsEdits: a `set var` at a stop in a decode step
// that was then killed changed values that `gen`, running the step again,
// recomputed without it; yet `info edits` kept listing it (applied 1), the
// pass's end noted it, and the dump's manifest said "the values hold the
// pass's edits: edit 1 ... = 0" over rows that were not 0. The aborted
// attempt's edits are now dropped when the step runs again: the one-off
// edit is gone and the row is the uninterrupted session's; a persistent
// edit made there stays, is applied once by the new attempt (applied 1,
// listed once) and its value, 5 in every column of the step's row, is
// what the dump holds.
func TestKillDecodeStepDropsItsEdits(t *testing.T) {
	refDir := uninterruptedDump(t, 2, "input ids 1,2", "1,2,3", 1)
	want, err := dumpSeq(t, refDir, 0).Tensor("hidden_states.2")
	if err != nil {
		t.Fatal(err)
	}

	for _, persist := range []bool{false, true} {
		f := newFake(t, 2)
		f.Exec("input ids 1,2")
		f.Exec("capture layers 1,2,3")
		f.Exec("run")
		f.Exec("break layers.2")
		f.AssertExec("gen 1", "step 1 (decode)")
		if persist {
			f.Exec("set var stream = 5 --persist")
		} else {
			f.Exec("set var stream = 0")
		}
		f.AssertExec("kill", "aborted")
		f.Exec("delete")
		out := f.Exec("gen 1")
		edits := f.Exec("info edits")
		dir := filepath.Join(t.TempDir(), "d")
		f.Exec("dump " + dir)
		m, err := capture.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dumpSeq(t, dir, 0).Tensor("hidden_states.2")
		if err != nil {
			t.Fatal(err)
		}
		if got.Rows() != 3 || want.Rows() != 3 {
			t.Fatalf("persist %v: rows %d and %d, want 3 (2 prompt + 1 decoded)", persist, got.Rows(), want.Rows())
		}
		row := got.F32()[2*64 : 3*64]
		if !persist {
			if len(m.Edits) != 0 || !bytes.Contains([]byte(edits), []byte("No edits.")) || bytes.Contains([]byte(out), []byte("edit 1")) {
				t.Fatalf("the killed step's edit is still listed: manifest %v\ninfo edits:\n%s\ngen:\n%s", m.Edits, edits, out)
			}
			if !bytes.Equal(got.Data, want.Data) {
				t.Fatalf("layer 2's rows differ from the uninterrupted session's: %v", row[:4])
			}
			continue
		}
		if len(m.Edits) != 1 || !bytes.Contains([]byte(edits), []byte("yes")) {
			t.Fatalf("the persistent edit: manifest %v\ninfo edits:\n%s", m.Edits, edits)
		}
		var applied []string
		for _, l := range bytes.Split([]byte(edits), []byte("\n"))[1:] {
			if fs := bytes.Fields(l); len(fs) > 0 {
				applied = append(applied, string(fs[len(fs)-1]))
			}
		}
		if !slices.Equal(applied, []string{"1"}) {
			t.Fatalf("applied %v, want one edit applied once:\n%s", applied, edits)
		}
		for c, v := range row {
			if !(v == 5) {
				t.Fatalf("column %d of the decoded row is %v, want 5 (the persistent edit)", c, v)
			}
		}
		if !bytes.Equal(got.Data[:2*64*4], want.Data[:2*64*4]) {
			t.Fatalf("the prompt's rows differ from the uninterrupted session's")
		}
	}
}

// TestKillDecodeStepDropsItsReplicaDiff: `set var stream = 1 --rank 1` at
// a stop in a decode step made rank 1's copy of layer 2 differ, and the
// captures' cross-rank record kept that after `kill` and `gen` ran the step
// again without the edit, so the dump was refused ("replicas equal:
// hidden_states.2: ranks 0 and 1 differ by 1.48") over rows every rank
// held alike. The record is rolled back with the rows: the dump is written
// and its rule passes, as an uninterrupted session's does.
func TestKillDecodeStepDropsItsReplicaDiff(t *testing.T) {
	f := newFake(t, 2)
	f.Exec("input ids 1,2")
	f.Exec("capture layers 1,2,3")
	f.Exec("run")
	f.Exec("break layers.2")
	f.AssertExec("gen 1", "step 1 (decode)")
	f.Exec("set var stream = 1 --rank 1")
	f.AssertExec("ranks stream", "diverged") // the edit made the copies differ in the aborted attempt
	f.AssertExec("kill", "aborted")
	f.Exec("delete")
	f.Exec("gen 1")
	dir := filepath.Join(t.TempDir(), "d")
	f.AssertExec("dump "+dir, "dumped 1 sequence (3 tokens)")
	m, err := capture.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := m.Replicas["hidden_states.2"]
	if !ok || !r.OK || !(r.MaxRelDiff == 0) {
		t.Fatalf("hidden_states.2's replica record %+v (found %v), want equal copies", r, ok)
	}
}

// TestKillDecodeStepDropsItsEditsAfterDelete: the killed step's edit is
// dropped by gen also when `delete edits` forgot an earlier edit of the
// pass in between (the aborted step's edits are known by identity, not by
// their place in the pass's list, which the deletion shifted).
func TestKillDecodeStepDropsItsEditsAfterDelete(t *testing.T) {
	f := newFake(t, 2)
	f.Exec("input ids 1,2")
	f.Exec("break layers.2")
	f.AssertExec("run", "step 0 (prefill)")
	f.AssertExec("set var stream[0] = 1", "edit 1:")
	f.Exec("continue")
	f.AssertExec("gen 1", "step 1 (decode)")
	f.AssertExec("set var stream = 0", "edit 2:")
	f.AssertExec("kill", "aborted")
	f.Exec("delete edits 1")
	f.Exec("delete")
	f.Exec("gen 1")
	f.AssertExec("info edits", "No edits.")
}

// TestKillDecodeStepDropsItsFaults: a fault injected at a stop in the
// prefill applies from decode step 1; `inject clear` at a stop in that
// step, then `kill` and `gen`, ran step 1 again without it, and every row
// was the uninterrupted, unfaulted session's — yet the dump's manifest
// said injected_faults ["scale-residual 2 at model.layers.1"] (the aborted
// attempt's), and `check` fails a dump written under injected faults. The
// faults the data was made under are rolled back with its rows. A fault
// injected at the killed stop does apply to the step run again, and stays
// named.
func TestKillDecodeStepDropsItsFaults(t *testing.T) {
	keys := []string{"hidden_states.1", "hidden_states.2", "hidden_states.4"}
	refDir := uninterruptedDump(t, 1, "input ids 1,2", "1,2,4", 2)
	want := dumpSeq(t, refDir, 0)

	for _, clear := range []bool{true, false} {
		f := newFake(t, 1)
		f.Exec("input ids 1,2")
		f.Exec("capture layers 1,2,4")
		f.Exec("break layers.3")
		if clear {
			f.AssertExec("run", "step 0 (prefill)")
			f.Exec("inject scale-residual 2 at layers.1") // from decode step 1 on
			f.Exec("continue")
			f.AssertExec("gen 1", "step 1 (decode)")
			f.Exec("inject clear")
		} else {
			f.Exec("run")
			f.Exec("continue")
			f.AssertExec("gen 1", "step 1 (decode)")
			f.Exec("inject scale-residual 2 at layers.1") // from the step run again on
		}
		f.AssertExec("kill", "aborted")
		f.Exec("delete")
		f.Exec("gen 2")
		dir := filepath.Join(t.TempDir(), "d")
		out := f.Exec("dump " + dir)
		m, err := capture.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !clear {
			if !slices.Equal(m.Faults, []string{"scale-residual 2 at model.layers.1"}) {
				t.Fatalf("a fault active in the step run again: injected_faults %v", m.Faults)
			}
			continue
		}
		if len(m.Faults) != 0 || bytes.Contains([]byte(out), []byte("INJECTED FAULTS")) {
			t.Fatalf("the killed attempt's fault is named: injected_faults %v\n%s", m.Faults, out)
		}
		got := openSeq(t, dir, m.Sequences[0].File)
		if ids, refIDs := tensorInts(t, got, "input_ids"), tensorInts(t, want, "input_ids"); len(ids) != 4 || !slices.Equal(ids, refIDs) {
			t.Fatalf("input_ids %v, want [1 2] and the 2 generated tokens of %v", ids, refIDs)
		}
		for _, k := range keys {
			g, err := got.Tensor(k)
			if err != nil {
				t.Fatal(err)
			}
			w, err := want.Tensor(k)
			if err != nil {
				t.Fatal(err)
			}
			if g.Rows() != 4 || len(g.Data) == 0 || !bytes.Equal(g.Data, w.Data) {
				t.Fatalf("%s: %v rows differ from the unfaulted session's %v", k, g.Shape, w.Shape)
			}
		}
	}
}
