package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// writeSpeculators writes a speculators file: hidden_states [rows, 2, 8]
// f32 of varied values and token_ids as given.
func writeSpeculators(t *testing.T, rows int, ids *tensor.Tensor) string {
	t.Helper()
	return writeSpeculatorsH(t, rows, 8, ids)
}

// writeSpeculatorsH is writeSpeculators with hidden_states [rows, 2,
// hidden].
func writeSpeculatorsH(t *testing.T, rows, hidden int, ids *tensor.Tensor) string {
	t.Helper()
	v := make([]float32, rows*2*hidden)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	p := filepath.Join(t.TempDir(), "hs_0.safetensors")
	ts := []safetensors.Named{{Name: "hidden_states", T: tensor.FromF32(v, rows, 2, hidden)}, {Name: "token_ids", T: ids}}
	if err := safetensors.WriteFile(p, ts, map[string]string{"convention": "speculators"}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckSpeculatorsIDsDType: the dtype rule passed a speculators file
// whose token_ids are f32 or bool ("pass dtype: hidden states f32,
// token_ids f32") while the structure rule failed it; and where no entry
// could be read (token_ids [2, 3] beside hidden_states [2, 2, 8]) it said
// "pass dtype: hidden states invalid". It now fails naming token_ids'
// dtype, and skips saying there are no entries.
func TestCheckSpeculatorsIDsDType(t *testing.T) {
	for _, c := range []struct {
		ids    *tensor.Tensor
		status capture.Status
		want   string
	}{
		{tensor.FromF32([]float32{1, 2, 3}, 3), capture.Fail, "token_ids is f32, not an integer dtype"},
		{tensor.New(tensor.Bool, 3), capture.Fail, "token_ids is bool, not an integer dtype"},
		{tensor.New(tensor.BF16, 3), capture.Fail, "token_ids is bf16, not an integer dtype"},
		{tensor.FromI64([]int64{1, 2, 3}, 3), capture.Pass, "hidden states f32, token_ids i64"},
		{tensor.New(tensor.I32, 3), capture.Pass, "hidden states f32, token_ids i32"},
	} {
		r := CheckFile(writeSpeculators(t, 3, c.ids), CheckOptions{})
		if d, _ := r.Rule(capture.RuleDType); d.Status != c.status || !strings.Contains(d.Detail, c.want) {
			t.Errorf("token_ids %s: dtype %s %q; want %s naming %q", c.ids.DType, d.Status, d.Detail, c.status, c.want)
		}
	}
	r := CheckFile(writeSpeculators(t, 2, tensor.FromI64([]int64{1, 2, 3, 4, 5, 6}, 2, 3)), CheckOptions{})
	if d, _ := r.Rule(capture.RuleDType); d.Status != capture.Skip || !strings.HasPrefix(d.Detail, "no hidden-state entries") || strings.Contains(d.Detail, "invalid") {
		t.Errorf("token_ids [2, 3]: dtype %s %q; want skip, no hidden-state entries", d.Status, d.Detail)
	}
	if !r.Failed() {
		t.Errorf("token_ids [2, 3]: verdict passes")
	}
}

// TestCheckBadIDsWithModelSaysNotRun: with --model, a speculators file
// whose token_ids are no token ids (beyond the vocabulary, or f32) is never
// run (the structure rule names them); the one-sequence rule then said
// "give --model" and matches-model "no token_ids", both given. They now
// say the model was not run and why.
func TestCheckBadIDsWithModelSaysNotRun(t *testing.T) {
	e := llamaEngine(t)
	for _, ids := range []*tensor.Tensor{
		tensor.FromI64([]int64{1, int64(e.Dims.Vocab), 2}, 3),
		tensor.FromF32([]float32{1, 2, 3}, 3),
	} {
		r := CheckFile(writeSpeculatorsH(t, 3, e.Dims.Hidden, ids), CheckOptions{Dims: e.Dims, Model: targetOf(e)})
		want := "--model was not run: token_ids is not one sequence of token ids (the structure rule says why)"
		for _, rule := range []string{capture.RuleOneSeq, capture.RuleMatch} {
			if d, _ := r.Rule(rule); d.Status != capture.Skip || !strings.Contains(d.Detail, want) {
				t.Errorf("token_ids %s: %s %s %q; want skip naming %q", ids.DType, rule, d.Status, d.Detail, want)
			}
		}
		if len(r.Matches) > 0 || !r.Failed() {
			t.Errorf("token_ids %s: %d matches, failed %v; want no forward pass, a failure", ids.DType, len(r.Matches), r.Failed())
		}
	}
}
