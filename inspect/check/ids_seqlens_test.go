package check

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// writeIDsCapture writes an hsdb-dump-shaped file: input_ids as given, an
// optional seq_lens, and hidden_states.1 [len(ids), hidden] of small
// varied values; it returns the path.
func writeIDsCapture(t *testing.T, ids, seqLens *tensor.Tensor, hidden int) string {
	t.Helper()
	n := ids.Numel()
	v := make([]float32, n*hidden)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	ts := []safetensors.Named{{Name: "input_ids", T: ids}}
	if seqLens != nil {
		ts = append(ts, safetensors.Named{Name: "seq_lens", T: seqLens})
	}
	ts = append(ts, safetensors.Named{Name: "hidden_states.1", T: tensor.FromF32(v, n, hidden)})
	p := filepath.Join(t.TempDir(), "capture.safetensors")
	if err := safetensors.WriteFile(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

func ids64(v ...int64) *tensor.Tensor { return tensor.FromI64(v, len(v)) }

// TestCheckSeqLensInvalid: a file's seq_lens with a length below 1, above
// len(input_ids), or of a float dtype fails the structure rule naming the
// element; before, [-5, 17] on 12 tokens summed to 12 and passed "2
// sequences flattened, split by the file's own seq_lens tensor: -5 + 17
// tokens" with the verdict valid, and [5.5, 6.5] was truncated to 5 + 6.
func TestCheckSeqLensInvalid(t *testing.T) {
	ids := ids64(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	for _, c := range []struct {
		lens *tensor.Tensor
		want string
	}{
		{ids64(-5, 17), "seq_lens[0] is -5: a sequence holds at least one token"},
		{ids64(0, 12), "seq_lens[0] is 0"},
		{ids64(6, 1<<62), "seq_lens[1] is 4611686018427387904, more than the 12 tokens"},
		{tensor.FromF32([]float32{5.5, 6.5}, 2), "seq_lens is f32, not an integer dtype"},
	} {
		r := CheckFile(writeIDsCapture(t, ids, c.lens, 8), CheckOptions{})
		st, _ := r.Rule(capture.RuleStructure)
		if !r.Failed() || st.Status != capture.Fail || !strings.Contains(st.Detail, c.want) {
			t.Errorf("seq_lens %v: structure %s %q; want a failure naming %q", c.lens.ToF32(), st.Status, st.Detail, c.want)
		}
	}
	r := CheckFile(writeIDsCapture(t, ids, ids64(5, 7), 8), CheckOptions{})
	if st, _ := r.Rule(capture.RuleOneSeq); r.Failed() || st.Status != capture.Pass || !strings.Contains(st.Detail, "5 + 7") {
		t.Errorf("seq_lens 5, 7: %v", r.Lines())
	}
}

// TestCheckIDsNotTokens: token ids below 0 or beyond int32 fail the
// structure rule, and with the model's sizes ids at or past vocab_size do;
// such ids are never run through the model. Before, with the model's
// config (no forward pass) ids -1 and 1000 on a 101-token vocabulary
// passed with the verdict valid, and with the model loaded an id of
// 2^32+5 was truncated to token 5 and matched against it.
func TestCheckIDsNotTokens(t *testing.T) {
	e := llamaEngine(t)
	for _, c := range []struct {
		ids       *tensor.Tensor
		model     bool
		wantModel string
	}{
		{ids64(1, -1, 3), false, "input_ids[1] = -1 is outside the model's vocabulary [0, 101)"},
		{ids64(1, 1000, 3, 2000), false, "input_ids[1] = 1000 is outside the model's vocabulary [0, 101) (and 1 more)"},
		{ids64(1, 1<<32+5, 3), true, "input_ids[1] = 4294967301 is outside the model's vocabulary [0, 101)"},
	} {
		o := CheckOptions{Dims: e.Dims}
		if c.model {
			o.Model = targetOf(e)
		}
		r := CheckFile(writeIDsCapture(t, c.ids, nil, e.Dims.Hidden), o)
		st, _ := r.Rule(capture.RuleStructure)
		if !r.Failed() || st.Status != capture.Fail || !strings.Contains(st.Detail, c.wantModel) {
			t.Errorf("ids %v: structure %s %q; want a failure naming %q", c.ids.ToF32(), st.Status, st.Detail, c.wantModel)
		}
		if c.model && len(r.Matches) > 0 {
			t.Errorf("ids %v: matched against the model (%d matches); want no forward pass", c.ids.ToF32(), len(r.Matches))
		}
	}
	// Without the model's sizes only what is never a token is refused.
	if r := CheckFile(writeIDsCapture(t, ids64(1, 1000, 3), nil, 8), CheckOptions{}); r.Failed() {
		t.Errorf("id 1000 without a model: %v; want valid (any vocabulary may hold it)", r.Lines())
	}
	r := CheckFile(writeIDsCapture(t, ids64(1, 1<<31, 3), nil, 8), CheckOptions{})
	if st, _ := r.Rule(capture.RuleStructure); st.Status != capture.Fail || !strings.Contains(st.Detail, "input_ids[1] = 2147483648 is not a token id") {
		t.Errorf("id 2^31 without a model: structure %s %q", st.Status, st.Detail)
	}
}

// TestCheckZeroWidthEntry: a hidden-state entry [len, 0] holds no values;
// without a model (hidden_size unknown) it passed every rule and the file
// was called valid. It now fails the shape rule naming the entry.
func TestCheckZeroWidthEntry(t *testing.T) {
	p := filepath.Join(t.TempDir(), "capture.safetensors")
	if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "input_ids", T: ids64(1, 2, 3)}, {Name: "hidden_states.1", T: tensor.New(tensor.F32, 3, 0)}}, nil); err != nil {
		t.Fatal(err)
	}
	r := CheckFile(p, CheckOptions{})
	if st, _ := r.Rule(capture.RuleShape); !r.Failed() || st.Status != capture.Fail || !strings.Contains(st.Detail, "hidden_states.1 is [3, 0]: a hidden state of width 0") {
		t.Errorf("a [3, 0] entry: shape %s %q; want a failure naming it", st.Status, st.Detail)
	}
}

// TestCheckIDsForm: input_ids that are not one sequence of integer ids
// fail the structure rule and are never run through the model: bool ids
// (seq_lens of bool was refused, input_ids of bool passed and the model
// ran on ids 0 and 1), a 0-d tensor, and a [2, 3] batch whose 6 ids
// matched the 6 rows of a [6, hidden] entry. A batch of one, [1, len],
// is one sequence and passes.
func TestCheckIDsForm(t *testing.T) {
	e := llamaEngine(t)
	for _, c := range []struct {
		ids  *tensor.Tensor
		want string
	}{
		{tensor.New(tensor.Bool, 3), "input_ids is bool, not an integer dtype"},
		{tensor.FromI64([]int64{5}), "input_ids is a 0-d tensor [], not a sequence"},
		{tensor.FromI64([]int64{1, 5, 7, 1, 9, 4}, 2, 3), "input_ids is [2, 3], not one sequence [len]"},
	} {
		for _, withModel := range []bool{false, true} {
			o := CheckOptions{}
			if withModel {
				o = CheckOptions{Dims: e.Dims, Model: targetOf(e)}
			}
			r := CheckFile(writeIDsCapture(t, c.ids, nil, e.Dims.Hidden), o)
			st, _ := r.Rule(capture.RuleStructure)
			if !r.Failed() || st.Status != capture.Fail || !strings.Contains(st.Detail, c.want) {
				t.Errorf("ids %s %s (model %v): structure %s %q; want a failure naming %q", c.ids.DType, tensor.ShapeString(c.ids.Shape), withModel, st.Status, st.Detail, c.want)
			}
			if len(r.Matches) > 0 {
				t.Errorf("ids %s %s: matched against the model (%d matches); want no forward pass", c.ids.DType, tensor.ShapeString(c.ids.Shape), len(r.Matches))
			}
		}
	}
	r := CheckFile(writeIDsCapture(t, tensor.FromI64([]int64{1, 5, 7}, 1, 3), nil, 8), CheckOptions{})
	if st, _ := r.Rule(capture.RuleStructure); st.Status != capture.Pass {
		t.Errorf("ids [1, 3]: structure %s %q; want pass (a batch of one)", st.Status, st.Detail)
	}
}

// TestCheckManyKeysListedBriefly: a file of 2,000 tensors none of which is
// a hidden state is refused with the first 10 keys and the count of the
// rest; every key went into one line (150 kB for 20,000).
func TestCheckManyKeysListedBriefly(t *testing.T) {
	ts := []safetensors.Named{{Name: "input_ids", T: ids64(1, 2, 3)}}
	for i := range 1999 {
		ts = append(ts, safetensors.Named{Name: fmt.Sprintf("t%04d", i), T: tensor.FromF32([]float32{1}, 1)})
	}
	p := filepath.Join(t.TempDir(), "capture.safetensors")
	if err := safetensors.WriteFile(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	r := CheckFile(p, CheckOptions{})
	st, _ := r.Rule(capture.RuleStructure)
	want := "no hidden states found (keys: input_ids, t0000, t0001, t0002, t0003, t0004, t0005, t0006, t0007, t0008 and 1990 more); expected hidden_states"
	if st.Status != capture.Fail || !strings.Contains(st.Detail, want) {
		t.Errorf("structure %s %.300q; want a failure naming %q", st.Status, st.Detail, want)
	}
}

// TestCheckZeroWidthWithModel: an entry [len, 0] (or per-token entries of
// [0]) with the model loaded fails the shape rule and compares nothing;
// the forward pass's match hook divided by its width ("internal error:
// runtime error: integer divide by zero" and a stack trace in the report),
// with --tp 2 as diff runs it and without.
func TestCheckZeroWidthWithModel(t *testing.T) {
	e := llamaEngine(t)
	dir := t.TempDir()
	twoD := filepath.Join(dir, "2d.safetensors")
	if err := safetensors.WriteFile(twoD, []safetensors.Named{{Name: "input_ids", T: ids64(1, 2, 3)}, {Name: "hidden_states.1", T: tensor.New(tensor.F32, 3, 0)}}, nil); err != nil {
		t.Fatal(err)
	}
	perToken := filepath.Join(dir, "rows.safetensors")
	ts := []safetensors.Named{{Name: "input_ids", T: ids64(1, 2, 3)}}
	for i := range 3 {
		ts = append(ts, safetensors.Named{Name: fmt.Sprintf("h.%d", i), T: tensor.New(tensor.F32, 0)})
	}
	if err := safetensors.WriteFile(perToken, ts, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{twoD, perToken} {
		for _, tp := range []int{0, 2} {
			r := CheckFile(p, CheckOptions{Dims: e.Dims, Model: targetOf(e), TP: tp})
			for _, l := range r.Lines() {
				if strings.Contains(l, "internal error") || strings.Contains(l, "divide by zero") {
					t.Fatalf("%s, tp %d: %s", filepath.Base(p), tp, l)
				}
			}
			if !r.Failed() {
				t.Errorf("%s, tp %d: not failed: %v", filepath.Base(p), tp, r.Lines())
			}
		}
	}
}

// TestCheckLayerKeyNotAnIndex: a key hidden_states.N whose N overflows (or
// passes 2^20, far above any model's layers) fails the structure rule
// naming the key; it was labelled layer 9223372036854775807, Atoi's value
// on overflow, and reported as that layer.
func TestCheckLayerKeyNotAnIndex(t *testing.T) {
	v := make([]float32, 3*8)
	for i := range v {
		v[i] = float32(i%5) - 2
	}
	for _, key := range []string{"hidden_states.99999999999999999999", "hidden_states.2000000"} {
		p := filepath.Join(t.TempDir(), "capture.safetensors")
		if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "input_ids", T: ids64(1, 2, 3)}, {Name: key, T: tensor.FromF32(v, 3, 8)}}, nil); err != nil {
			t.Fatal(err)
		}
		r := CheckFile(p, CheckOptions{})
		st, _ := r.Rule(capture.RuleStructure)
		want := key + ": " + strings.TrimPrefix(key, "hidden_states.") + " is not a layer index"
		if !r.Failed() || st.Status != capture.Fail || !strings.Contains(st.Detail, want) {
			t.Errorf("%s: structure %s %q; want a failure naming %q", key, st.Status, st.Detail, want)
		}
		if strings.Contains(strings.Join(r.Lines(), "\n"), "9223372036854775807") {
			t.Errorf("%s: labelled by Atoi's overflow value:\n%s", key, strings.Join(r.Lines(), "\n"))
		}
	}
}
