package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestPlanLanguageModelLayout: the loader takes a DeepSeek checkpoint
// whose decoder is stored under "language_model." (language_model.layers.1…,
// language_model.embed_tokens.weight, lm_head.weight), the fourth of its
// layouts; the plan looked its tensors up under three names only, so for
// such a checkpoint it read no stored dtype (the dense weights counted at
// config.json's f32) and no quantized header (the fp8 weights counted
// dense, a broken scale not refused). testdata/hf/deepseek_v3_fp8 with its
// dense float tensors stored bf16, written once under the plain names and
// once under that layout: both plans are, by hand, the bytes the header
// gives for every tensor plus vLLM's vocabulary padding (101 rows padded
// to 128: 27 rows of hidden 96 in bf16, for embed_tokens and lm_head), the
// quantized part the fp8 weights and their scales; both load; and with
// layer 1's expert 3 down_proj scale removed the plan of the wrapped
// layout is refused as its load is, naming the tensor by its stored name.
// The plan's dense_dtype is the dtype the dense weights are counted at,
// bf16, not config.json's float32.
func TestPlanLanguageModelLayout(t *testing.T) {
	toBF16 := func(m map[string]*tensor.Tensor, _ *[]string) {
		for n, x := range m {
			if x.DType == tensor.F32 && !strings.HasSuffix(n, "_scale_inv") && !strings.HasSuffix(n, "e_score_correction_bias") {
				m[n] = x.Convert(tensor.BF16)
			}
		}
	}
	wrap := func(m map[string]*tensor.Tensor, order *[]string) {
		toBF16(m, order)
		for i, n := range *order {
			if rest, ok := strings.CutPrefix(n, "model."); ok {
				m["language_model."+rest] = m[n]
				delete(m, n)
				(*order)[i] = "language_model." + rest
			}
		}
	}
	for _, c := range []struct {
		name string
		edit func(m map[string]*tensor.Tensor, order *[]string)
	}{{"plain", toBF16}, {"language_model.", wrap}} {
		dir := hostileCopy(t, "deepseek_v3_fp8")
		st := filepath.Join(dir, "model.safetensors")
		hostileTensors(t, st, c.edit)
		f, err := safetensors.Open(st)
		if err != nil {
			t.Fatal(err)
		}
		var stored, fp8, dense int64
		for _, n := range f.Names() {
			ti, _ := f.Info(n)
			stored += ti.Bytes()
			switch {
			case ti.DType == tensor.F8E4M3 || strings.HasSuffix(n, "_scale_inv"):
				fp8 += ti.Bytes()
			case ti.DType == tensor.BF16:
				dense++
			}
			if c.name != "plain" && strings.HasPrefix(n, "model.") {
				t.Fatalf("%s: the fixture still holds %s", c.name, n)
			}
		}
		f.Close()
		if fp8 == 0 || dense == 0 {
			t.Fatalf("%s: the fixture holds %d fp8 bytes, %d bf16 tensors", c.name, fp8, dense)
		}
		p, err := PlanDir(dir, PlanOptions{TP: 1, Device: "cuda"})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := p.Ranks[0]
		if want := stored + 2*27*96*2; r.Weights != want || r.QuantizedWeights != fp8 || !p.Checkpoint {
			t.Errorf("%s: weights %d (quantized %d), want %d (quantized %d)", c.name, r.Weights, r.QuantizedWeights, want, fp8)
		}
		// config.json says float32; the dense tensors counted are bf16
		// (all but the f32 e_score_correction_bias), and dense_dtype says
		// so (it said f32).
		if p.Dense != "bf16" {
			t.Errorf("%s: dense_dtype %q, want bf16 (the stored dtype of the dense weights counted)", c.name, p.Dense)
		}
		e, err := LoadDir(dir, Options{TP: 1})
		if err != nil {
			t.Fatalf("%s: load: %v", c.name, err)
		}
		e.Close()
	}
	const w = "language_model.layers.1.mlp.experts.3.down_proj.weight"
	dir := hostileCopy(t, "deepseek_v3_fp8")
	hostileTensors(t, filepath.Join(dir, "model.safetensors"), func(m map[string]*tensor.Tensor, order *[]string) {
		wrap(m, order)
		delete(m, w+"_scale_inv")
	})
	want := "fp8 weight " + w + " has no scale tensor " + w + "_scale_inv in the checkpoint"
	for _, dev := range []string{"cuda", "cpu"} {
		p, err := PlanDir(dir, PlanOptions{TP: 1, Device: dev})
		if p != nil || err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, model.ErrWeight) {
			t.Errorf("plan --device %s of a removed scale: plan %v, %v\nwant a weight error containing %q", dev, p != nil, err, want)
		}
	}
	if e, err := LoadDir(dir, Options{TP: 1}); err == nil || !strings.Contains(err.Error(), want) {
		if e != nil {
			e.Close()
		}
		t.Errorf("load of a removed scale: %v\nwant an error containing %q", err, want)
	}
}
