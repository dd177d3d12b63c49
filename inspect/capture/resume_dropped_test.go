package capture

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
)

// TestResumeNamesKeptFilesFailingCheck: a job over 12 rows of the HF
// fixture's sequences (cycled) interrupted after its third batch; then, in
// its staging directory, sequence 1's file is removed and sequence 2's
// last byte changed. The resume dropped both silently and captured them
// again ("0 of 12 recaptured"): a kept file that no longer passes its
// check is a disk or a hand that changed validated data, which the job now
// names, once per sequence. Expected by hand: two notes, for sequences 1
// ("r1", no such file) and 2 ("r2", its hidden_states.1 sha256 differs
// from the journal's), in that order; the finished dump holds all 12 rows,
// and sequence 2's layer-0 stream is HF transformers' (within 1e-5).
func TestResumeNamesKeptFilesFailingCheck(t *testing.T) {
	ref, seqs, starts := hfLlamaRows(t)
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const rows = 12
	p := writeHFRows(t, seqs, rows)
	in, err := OpenJSONL(p, nil, LimitsOf(e.Dims))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := JobOptions{Layers: []int{0, 1}, Out: out, MaxBatchTokens: 20, Writers: 1,
		AfterBatch: func(done int) {
			if done >= 3 {
				cancel()
			}
		}}
	first, err := RunCaptureJob(ctx, targetOf(e), in, opts)
	if err == nil || first.Done < 3 || first.Done >= rows {
		t.Fatalf("first run: done %v, %v; want interrupted after 3 of %d rows", first, err, rows)
	}
	stage := out + PartialSuffix
	if err := os.Remove(filepath.Join(stage, "seq_000001.safetensors")); err != nil {
		t.Fatal(err)
	}
	f2 := filepath.Join(stage, "seq_000002.safetensors")
	b, err := os.ReadFile(f2)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x40 // the last byte of the last tensor, hidden_states.1
	if err := os.WriteFile(f2, b, 0o644); err != nil {
		t.Fatal(err)
	}
	opts.AfterBatch = nil
	res, err := RunCaptureJob(context.Background(), targetOf(e), in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Recaptured) != 2 ||
		!strings.HasPrefix(res.Recaptured[0], `sequence 1 (id "r1"), validated by an earlier run, fails its check now: `) || !strings.Contains(res.Recaptured[0], "no such file") ||
		!strings.HasPrefix(res.Recaptured[1], `sequence 2 (id "r2"), validated by an earlier run, fails its check now: `) || !strings.Contains(res.Recaptured[1], "hidden_states.1 has sha256") ||
		!strings.HasSuffix(res.Recaptured[1], "; captured again") {
		t.Fatalf("recaptured %q, want sequences 1 (missing) and 2 (sha256)", res.Recaptured)
	}
	if res.Skipped != first.Done-2 || len(dumpSeqs(t, res, out)) != rows {
		t.Fatalf("skipped %d (first run %d), %d sequences", res.Skipped, first.Done, len(dumpSeqs(t, res, out)))
	}
	f, err := safetensors.Open(filepath.Join(out, "seq_000002.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Tensor("hidden_states.0")
	if err != nil {
		t.Fatal(err)
	}
	k := 2 % len(seqs)
	want, _ := ref.RowsView("hf_hidden_states.1", starts[k], starts[k]+len(seqs[k]))
	if err := enginetest.CheckClose(got.F32(), want.ToF32(), 1e-5); err != nil {
		t.Errorf("sequence 2 vs HF: %v", err)
	}
}

// TestDroppedBounded: a resume over a staging directory whose kept files
// all fail (a disk gone bad) gives at most maxDroppedNotes (8) lines and
// counts the rest: 10 dropped → 8 lines and "and 2 more sequences ...".
func TestDroppedBounded(t *testing.T) {
	w := &DumpWriter{}
	if got := w.Dropped(); got != nil {
		t.Fatalf("none dropped: %q", got)
	}
	for i := range 10 {
		w.dropKept(SeqRecord{Index: i, ID: "s"}, os.ErrNotExist)
	}
	got := w.Dropped()
	if len(got) != 9 || !strings.HasPrefix(got[7], `sequence 7 (id "s")`) || got[8] != "and 2 more sequences whose kept files fail their check: captured again" {
		t.Errorf("%d lines: %q", len(got), got)
	}
}
