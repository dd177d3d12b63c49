package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestSpecForgeAuxCount: a SpecForge sample whose aux_hidden_state holds
// 2 or 4 layers ([1, len, k·hidden]) was "valid", although SpecForge's
// Eagle-3 draft asserts hidden_states.size(-1) == target_hidden_size * 3
// (specforge/modeling/draft/llama3_eagle.py project_hidden_states) and its
// fc is Linear(3·hidden, hidden): the trainer cannot read the file. check
// reads it as the trainer does: a structure failure naming the count; 3
// layers pass. hsdb's own writer refuses the other counts
// (capture.TestSpecForgeAuxRefused), so the files are torch.save archives
// built here as prepare_hidden_states.py lays them out: input_ids [len],
// loss_mask [len], hidden_state [1, len, hidden], aux_hidden_state [1,
// len, k·hidden].
func TestSpecForgeAuxCount(t *testing.T) {
	const n, h = 4, 8
	for _, c := range []struct {
		k    int
		fail bool
	}{{2, true}, {3, false}, {4, true}} {
		vals := func(w int) *tensor.Tensor {
			v := make([]float32, n*w)
			for i := range v {
				v[i] = float32(i%7) - 3 + float32(c.k)/10
			}
			return tensor.FromF32(v, 1, n, w)
		}
		ents := []capture.TorchEntry{
			{Key: "input_ids", T: tensor.FromI64([]int64{1, 5, 7, 9}, n)},
			{Key: "loss_mask", T: tensor.FromI64([]int64{1, 1, 1, 1}, n)},
			{Key: "hidden_state", T: vals(h)},
			{Key: "aux_hidden_state", T: vals(c.k * h)},
		}
		p := filepath.Join(t.TempDir(), "data_0.ckpt")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := capture.WriteTorchSave(f, "archive", ents); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		r := CheckFile(p, CheckOptions{})
		st, ok := r.Rule(capture.RuleStructure)
		want := "aux_hidden_state holds " + string(rune('0'+c.k)) + " layers"
		failed := ok && st.Status == capture.Fail && strings.Contains(st.Detail, want)
		if !ok || failed != c.fail || (!c.fail && st.Status == capture.Fail) {
			t.Errorf("%d aux layers: structure %v %s %q, want failure %v", c.k, ok, st.Status, st.Detail, c.fail)
		}
	}
}
