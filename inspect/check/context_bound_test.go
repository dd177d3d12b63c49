package check

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestMatchRefusesSequenceOverContext: a capture of 65 tokens with no
// sequence lengths, checked against the llama fixture
// (max_position_embeddings 64), was run through the model as one
// 65-token sequence — one no engine computed, at a cost quadratic in its
// length (a 25 MB file of one 100,000-token sequence ran for minutes on
// stories260K). The match is skipped naming the length, the bound and
// --seq-lens, and the model never runs; with --seq-lens 33,32 it runs.
func TestMatchRefusesSequenceOverContext(t *testing.T) {
	ids := make([]int64, 65)
	for i := range ids {
		ids[i] = int64(1 + i%90)
	}
	p := filepath.Join(t.TempDir(), "long.safetensors")
	hs := tensor.New(tensor.F32, 65, 96)
	for i := range 65 * 96 {
		hs.F32()[i] = float32(i%7) - 3
	}
	if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "input_ids", T: tensor.FromI64(ids, 65)}, {Name: "hidden_states.1", T: hs}}, nil); err != nil {
		t.Fatal(err)
	}
	d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
	runs := 0
	tg := targetOf(llamaEngine(t))
	inner := tg.Prefill
	tg.Prefill = func(s [][]int32, h model.Hook) error { runs++; return inner(s, h) }
	r := CheckFile(p, CheckOptions{Dims: d, Model: tg})
	want := "longer than the model's context: input_ids holds 65 tokens and the file says nothing of its sequences, so they would run as one sequence, longer than max_position_embeddings 64: give the sequences' lengths with --seq-lens"
	if !errors.Is(r.matchErr, ErrLongerThanContext) || runs != 0 || !strings.Contains(strings.Join(r.Lines(), "\n"), "skip  matches model     "+want) {
		t.Fatalf("err %v, %d runs:\n%s", r.matchErr, runs, strings.Join(r.Lines(), "\n"))
	}
	r = CheckFile(p, CheckOptions{Dims: d, Model: tg, SeqLens: []int{33, 32}})
	if r.matchErr != nil || runs == 0 {
		t.Fatalf("--seq-lens 33,32: err %v, %d runs", r.matchErr, runs)
	}
}
