package capture

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
)

// TestResumeAfterInputChanged: a job over a 30-row --data file (the HF
// fixture's three sequences, cycled) during which row 20 is rewritten in
// place (its ids reversed: same bytes, other tokens) after two batches,
// then interrupted once row 20 is written; the file is then restored and
// the job resumed. The resume's input has the digest the first run
// validated, so the staging directory is taken over — but its file for
// row 20 holds the reversed row. Expected (by hand): the resume names
// sequence 8 as not holding its row and captures it again; every file's
// ids tensor (hsdb: input_ids; speculators: token_ids) equals the
// restored row, and row 8's hidden states equal HF transformers' for its
// sequence (within 1e-5 of max|x|, TestStreamedJobMatchesHF's bound).
func TestResumeAfterInputChanged(t *testing.T) {
	ref, seqs, starts := hfLlamaRows(t)
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const rows, changed = 30, 8
	spec, err := PlanLayers(FormatSpeculators, "1,2", e.Dims.Layers, parseInts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		plan   *Plan
		idsKey string
		hsKey  string // the layer-0 stream (HF output_hidden_states[1])
	}{
		{"hsdb", nil, "input_ids", "hidden_states.0"},
		{"speculators", spec, "token_ids", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeHFRows(t, seqs, rows)
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			s := seqs[changed%len(seqs)]
			r := slices.Clone(s)
			slices.Reverse(r)
			fwd, rev := idsJSON(s), idsJSON(r)
			line := fmt.Sprintf("\"r%d\", \"input_ids\": [%s]", changed, fwd)
			if strings.Count(string(orig), line) != 1 || fwd == rev {
				t.Fatalf("row %d: %q found %d times (reversed %q)", changed, line, strings.Count(string(orig), line), rev)
			}
			edited := strings.Replace(string(orig), line, fmt.Sprintf("\"r%d\", \"input_ids\": [%s]", changed, rev), 1)
			in, err := OpenJSONL(p, nil, LimitsOf(e.Dims))
			if err != nil {
				t.Fatal(err)
			}
			// Changed after it was validated (the job's reads see the edit;
			// a reader's buffer would hide an edit of a small file made later).
			if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "o")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := JobOptions{Plan: tc.plan, Layers: []int{0, 1}, Out: out, MaxBatchTokens: 20, Writers: 1,
				AfterBatch: func(done int) {
					if done > changed {
						cancel()
					}
				}}
			first, err := RunCaptureJob(ctx, targetOf(e), in, opts)
			if err == nil || first.Done <= changed {
				t.Fatalf("first run: done %v, %v; want interrupted after row %d", first, err, changed)
			}
			if err := os.WriteFile(p, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			opts.AfterBatch = nil
			res, err := RunCaptureJob(context.Background(), targetOf(e), in, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Recaptured) != 1 || !strings.Contains(res.Recaptured[0], fmt.Sprintf("sequence %d (id \"r%d\")", changed, changed)) ||
				!strings.Contains(res.Recaptured[0], "token ids differ") || res.Skipped != first.Done-1 || len(dumpSeqs(t, res, out)) != rows {
				t.Fatalf("resume: recaptured %q, skipped %d (first run %d), %d sequences", res.Recaptured, res.Skipped, first.Done, len(dumpSeqs(t, res, out)))
			}
			for _, rec := range dumpSeqs(t, res, out) {
				var i int
				if _, err := fmt.Sscanf(rec.ID, "r%d", &i); err != nil {
					t.Fatal(err)
				}
				f, err := safetensors.Open(filepath.Join(out, rec.File))
				if err != nil {
					t.Fatal(err)
				}
				ids, err := f.Tensor(tc.idsKey)
				if err != nil {
					t.Fatal(err)
				}
				if got := i64s(ids.Data); fmt.Sprint(got) != fmt.Sprint(seqs[i%len(seqs)]) {
					t.Errorf("%s: %s %v, want the row's %v", rec.ID, tc.idsKey, got, seqs[i%len(seqs)])
				}
				var row []int64
				for _, v := range seqs[i%len(seqs)] {
					row = append(row, int64(v))
				}
				if rec.Tensors[tc.idsKey].SHA256 != i64SHA(row...) { // the recaptured row's record, not the stale one
					t.Errorf("%s: manifest's %s sha256 %s, want the row's %s", rec.ID, tc.idsKey, rec.Tensors[tc.idsKey].SHA256, i64SHA(row...))
				}
				if i == changed && tc.hsKey != "" {
					got, err := f.Tensor(tc.hsKey)
					if err != nil {
						t.Fatal(err)
					}
					k := i % len(seqs)
					want, _ := ref.RowsView("hf_hidden_states.1", starts[k], starts[k]+len(seqs[k]))
					if err := enginetest.CheckClose(got.F32(), want.ToF32(), 1e-5); err != nil {
						t.Errorf("%s vs HF: %v", rec.ID, err)
					}
				}
				f.Close()
			}
		})
	}
}

// idsJSON writes ids as writeHFRows does ("1, 2, 3").
func idsJSON(s []int32) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// i64s reads an I64 tensor's values (little-endian, as safetensors stores
// them).
func i64s(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// TestFailedJobSaysItResumes: a job that fails after validating sequences
// (here: a row appended to its --data file after it was validated, found
// at the end of the file) says that the staging directory keeps them and
// that the same command resumes; restored, the same job resumes skipping
// exactly as many as the failure said were kept (at least one, at most
// the file's 12 rows), and completes with 12.
func TestFailedJobSaysItResumes(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	p := writeHFRows(t, enginetest.HFSeqs(t, ref), 12)
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := OpenJSONL(p, nil, LimitsOf(e.Dims))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(append([]byte{}, orig...), "{\"input_ids\": [1, 2]}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o")
	opts := JobOptions{Layers: []int{1}, Out: out, MaxBatchTokens: 20, Writers: 1}
	_, err = RunCaptureJob(context.Background(), targetOf(e), in, opts)
	var kept int
	if err == nil || !strings.Contains(err.Error(), "changed while the job ran") {
		t.Fatalf("got %v, want the change named", err)
	}
	msg := err.Error()
	i := strings.LastIndex(msg, "; "+out+PartialSuffix+" keeps the ")
	if i < 0 || !strings.HasSuffix(msg, " sequences validated so far: the same command resumes from there") {
		t.Fatalf("got %q, want what %s keeps and that the same command resumes", msg, out+PartialSuffix)
	}
	if _, err := fmt.Sscanf(msg[i:], "; "+out+PartialSuffix+" keeps the %d sequences", &kept); err != nil || kept < 1 || kept > 12 {
		t.Fatalf("kept %d (%v) in %q", kept, err, msg)
	}
	if err := os.WriteFile(p, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := RunCaptureJob(context.Background(), targetOf(e), in, opts)
	if err != nil || res.Skipped != kept || len(dumpSeqs(t, res, out)) != 12 {
		t.Fatalf("resume: %v, %v; want %d skipped (as the failure said), 12 in all", res, err, kept)
	}
}
