package capture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
)

// writeHFRows writes a --data file of n rows cycling through the HF
// fixture's sequences, with ids "r0", "r1", ... and a blank line every
// tenth row; it returns the path.
func writeHFRows(t *testing.T, seqs [][]int32, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		s := seqs[i%len(seqs)]
		ids := make([]string, len(s))
		for j, v := range s {
			ids[j] = fmt.Sprint(v)
		}
		fmt.Fprintf(&b, "{\"id\": \"r%d\", \"input_ids\": [%s]}\n", i, strings.Join(ids, ", "))
		if i%10 == 9 {
			b.WriteString("\n")
		}
	}
	p := filepath.Join(t.TempDir(), "data.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStreamedJobMatchesHF: a --data file of 90 rows (the HF fixture's
// three sequences, cycled) is opened with OpenJSONL (Seqs stays nil: the
// job reads the file as it packs batches of at most 20 tokens), stopped
// after its first batches and resumed: every sequence's hidden_states.0
// and .1 equal HF transformers' output_hidden_states[1] and [2] for that
// sequence's rows within 1e-5 of max|x| (TestDumpRoundTripHF's bound), the
// resume skips what the first run validated, and the manifest lists 90.
func TestStreamedJobMatchesHF(t *testing.T) {
	ref, seqs, starts := hfLlamaRows(t)
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const rows = 90
	in, err := OpenJSONL(writeHFRows(t, seqs, rows), nil, LimitsOf(e.Dims))
	if err != nil {
		t.Fatal(err)
	}
	if in.Seqs != nil || in.Len() != rows || in.Job.Sequences != rows {
		t.Fatalf("OpenJSONL held %d sequences, counted %d (job %d); want none held, %d counted", len(in.Seqs), in.Len(), in.Job.Sequences, rows)
	}
	out := filepath.Join(t.TempDir(), "o")
	ctx, cancel := context.WithCancel(context.Background())
	opts := JobOptions{Layers: []int{0, 1}, Out: out, MaxBatchTokens: 20, Writers: 1,
		AfterBatch: func(done int) {
			if done >= 10 {
				cancel()
			}
		}}
	first, err := RunCaptureJob(ctx, targetOf(e), in, opts)
	if err == nil || first.Done < 10 || first.Done >= rows {
		t.Fatalf("first run: done %d, %v; want interrupted after 10 or more of %d", first.Done, err, rows)
	}
	opts.AfterBatch = nil
	res, err := RunCaptureJob(context.Background(), targetOf(e), in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != first.Done || res.Done != rows || len(dumpSeqs(t, res, out)) != rows {
		t.Fatalf("resume skipped %d (first run validated %d), done %d, manifest %d; want %d", res.Skipped, first.Done, res.Done, len(dumpSeqs(t, res, out)), rows)
	}
	checkRowsHF(t, ref, seqs, starts, out, dumpSeqs(t, res, out))
}

// TestStreamedJobRowsHeld: the rows a streamed job holds at once are a
// batch and the row read ahead, whatever the file's length: with batches
// of at most 20 tokens of sequences of at least 3 tokens (the HF fixture's
// shortest; so at most 6 rows and one ahead), 30 and 300 rows reach the
// same most-held count, and it is at most 7.
func TestStreamedJobRowsHeld(t *testing.T) {
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	seqs := enginetest.HFSeqs(t, ref)
	shortest := len(seqs[0])
	for _, s := range seqs {
		shortest = min(shortest, len(s))
	}
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer func() { rowsHeldHook = nil }()
	most := map[int]int{}
	for _, rows := range []int{30, 300} {
		in, err := OpenJSONL(writeHFRows(t, seqs, rows), nil, LimitsOf(e.Dims))
		if err != nil {
			t.Fatal(err)
		}
		rowsHeldHook = func(n int) { most[rows] = max(most[rows], n) }
		res, err := RunCaptureJob(context.Background(), targetOf(e), in, JobOptions{Layers: []int{1}, Out: filepath.Join(t.TempDir(), "o"), MaxBatchTokens: 20})
		if err != nil || res.Done != rows {
			t.Fatalf("%d rows: done %v, %v", rows, res, err)
		}
	}
	if bound := 20/shortest + 1; most[30] != most[300] || most[300] > bound || most[300] == 0 {
		t.Fatalf("rows held at most: %d for 30 rows, %d for 300; want equal, 1 to %d", most[30], most[300], bound)
	}
}

// TestOpenJSONLLineAndChange: a line over the per-line limit is an error
// naming the file, the line and the limit; a file changed after OpenJSONL
// validated it is an error when the job reads it, not another input.
func TestOpenJSONLLineAndChange(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.jsonl")
	long := `{"input_ids": [` + strings.Repeat("1, ", 100) + `1]}`
	if err := os.WriteFile(p, []byte("{\"input_ids\": [1, 2]}\n\n"+long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	maxLineBytes = 64
	_, err := OpenJSONL(p, nil, Limits{})
	maxLineBytes = MaxLineBytes
	if want := p + ":3: a line longer than 64 bytes"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("long line: %v, want %q", err, want)
	}
	in, err := OpenJSONL(p, nil, Limits{Vocab: 10})
	if err != nil || in.Len() != 2 {
		t.Fatalf("OpenJSONL: %v, %d sequences; want 2", err, in.Len())
	}
	if err := os.WriteFile(p, []byte("{\"input_ids\": [1, 2]}\n{\"input_ids\": [3]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := in.Rows()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for err == nil {
		_, _, err = r.Next()
	}
	if !strings.Contains(err.Error(), p+" changed while the job ran") {
		t.Fatalf("changed file: %v", err)
	}
}
