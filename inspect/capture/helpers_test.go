package capture

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tokenizer"
)

// targetOf wraps an engine as cmd/hsdb does.
func targetOf(e *engine.Engine) *Target {
	return &Target{Dims: e.Dims, Tree: e.Tree, Info: infoOf(e),
		Prefill: func(s [][]int32, h model.Hook) error { _, err := e.Prefill(s, h, false); return err }}
}

func infoOf(e *engine.Engine) ModelInfo {
	return ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name())
}

// dumpSeqs returns the sequences of the dump a job wrote to out, read
// from its manifest.json (a job's Finish returns the manifest without
// them); it fails the test when their count is not the job's Summary.
func dumpSeqs(t testing.TB, res *JobResult, out string) []SeqRecord {
	t.Helper()
	m, err := ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || res.Manifest == nil || len(m.Sequences) != res.Manifest.Summary.Sequences {
		t.Fatalf("%s lists %d sequences, the job's summary says otherwise (%+v)", out, len(m.Sequences), res)
	}
	return m.Sequences
}

// hfLlamaRows opens the HF Llama fixture's reference (closed when the test
// ends) and returns it, its sequences and each sequence's first row in
// the reference's concatenated rows.
func hfLlamaRows(t *testing.T) (*safetensors.File, [][]int32, []int) {
	t.Helper()
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	seqs := enginetest.HFSeqs(t, ref)
	starts := make([]int, len(seqs))
	for i := 1; i < len(seqs); i++ {
		starts[i] = starts[i-1] + len(seqs[i-1])
	}
	return ref, seqs, starts
}

// checkRowsHF checks every listed sequence file of the dump in out (ids
// "r<i>", row i holding sequence i mod len(seqs), as writeHFRows writes
// them): its hidden_states.0 and .1 equal HF transformers'
// output_hidden_states[1] and [2] for that sequence within 1e-5 of max|x|.
func checkRowsHF(t *testing.T, ref *safetensors.File, seqs [][]int32, starts []int, out string, recs []SeqRecord) {
	t.Helper()
	for _, rec := range recs {
		var i int
		if _, err := fmt.Sscanf(rec.ID, "r%d", &i); err != nil {
			t.Fatalf("manifest id %q: %v", rec.ID, err)
		}
		s := i % len(seqs)
		f, err := safetensors.Open(filepath.Join(out, rec.File))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []int{0, 1} {
			got, err := f.Tensor(fmt.Sprintf("hidden_states.%d", l))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ref.RowsView(fmt.Sprintf("hf_hidden_states.%d", l+1), starts[s], starts[s]+len(seqs[s]))
			if err := enginetest.CheckClose(got.F32(), want.ToF32(), 1e-5); err != nil {
				t.Errorf("row %s layer %d vs HF: %v", rec.ID, l, err)
			}
		}
		f.Close()
	}
}

// readJSONL reads a batch job's input file whole into Inputs.Seqs, for
// tests (`hsdb capture` streams with OpenJSONL). The rows and errors are
// OpenJSONL's.
func readJSONL(path string, tok tokenizer.Tokenizer, lim Limits) (*Inputs, error) {
	in, err := OpenJSONL(path, tok, lim)
	if err != nil {
		return nil, err
	}
	r, err := in.Rows()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	seqs := make([]InputSeq, 0, in.Len())
	for {
		_, s, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		seqs = append(seqs, s)
	}
	return &Inputs{Seqs: seqs, Job: in.Job, Masked: in.Masked}, nil
}
