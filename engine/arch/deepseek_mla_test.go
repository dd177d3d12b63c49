package arch_test

import (
	"errors"
	"math"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// mlaEdit is a hook that overwrites one tensor of one site on every rank
// (with zeros, or with NaN) and copies layer 1's attention output to the
// host afterwards.
type mlaEdit struct {
	site, name string
	nan        bool
	attnOut    []*tensor.Tensor // per rank
	edited     int
}

const mlaAttn = "model.layers.1.self_attn.attn"

func (h *mlaEdit) Want(ev *model.Event) bool {
	return ev.Site.Path == h.site || ev.Site.Path == mlaAttn
}

func (h *mlaEdit) Visit(ev *model.Event, ranks []*model.RankView) error {
	for _, v := range ranks {
		st, ok := v.Tensor(h.name)
		if ev.Site.Path == mlaAttn {
			st, ok = v.Tensor("attn_out")
			if ok {
				s := st.T.Shape()
				h.attnOut = append(h.attnOut, v.Device.ToHost(st.T, 0, s[0], 0, tensor.Numel(s[1:])))
			}
			continue
		}
		if !ok || !st.Writable || st.T == nil {
			return errors.New(h.site + " shows no writable " + h.name)
		}
		dev, s := v.Device, st.T.Shape()
		src := dev.Alloc(s...)
		if h.nan {
			src = dev.Scale(st.T, float32(math.NaN()))
		}
		dev.CopyRows(st.T, 0, src, 0, s[0])
		h.edited++
	}
	return nil
}

// TestDeepseekMLAEditsFlowOn: MLA computes keys and values straight into
// the KV cache and rotates q in place, making the kv_b_proj and
// rotary_emb site tensors only for a hook; what the hook writes there must
// still be what attention uses. Derived by hand: v = 0 makes every
// attention output 0 (a convex sum of zero rows); a NaN q_pe or k_pe makes
// every score, hence every output, NaN. Without the edit the same output is
// finite and not all zero (so the checks can fail). On the CPU and, where
// present, CUDA (f32, and bf16 whose value width takes the scalar copy).
func TestDeepseekMLAEditsFlowOn(t *testing.T) {
	w := randWeights(parseCfg(t, v3Config), 13, 0.05)
	src := &model.MapSource{Name: "v3", Tensors: w}
	opts := []engine.Options{{TP: 1}, {TP: 2}, {TP: 1, Device: "cuda"}, {TP: 2, Device: "cuda"}, {TP: 1, Device: "cuda", DType: tensor.BF16}}
	for _, o := range opts {
		e, err := engine.LoadSource("v3", []byte(v3Config), src, o)
		if errors.Is(err, engine.ErrDevice) {
			t.Logf("%s: skipped: %v", o.Device, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		run := func(h *mlaEdit) []*tensor.Tensor {
			t.Helper()
			if _, err := e.Prefill(prompts, h, false); err != nil {
				t.Fatalf("%+v %s.%s: %v", o, h.site, h.name, err)
			}
			if len(h.attnOut) != o.TP || (h.site != "" && h.edited != o.TP) {
				t.Fatalf("%+v %s.%s: %d outputs, %d edits for %d ranks", o, h.site, h.name, len(h.attnOut), h.edited, o.TP)
			}
			return h.attnOut
		}
		for r, x := range run(&mlaEdit{}) {
			nonzero := false
			for _, f := range x.F32() {
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					t.Fatalf("%+v rank %d: unedited attn_out holds %v", o, r, f)
				}
				nonzero = nonzero || f != 0
			}
			if !nonzero {
				t.Fatalf("%+v rank %d: unedited attn_out is all zero", o, r)
			}
		}
		for r, x := range run(&mlaEdit{site: "model.layers.1.self_attn.kv_b_proj", name: "v"}) {
			for i, f := range x.F32() {
				if f != 0 {
					t.Fatalf("%+v rank %d: v = 0 at kv_b_proj, attn_out[%d] = %v", o, r, i, f)
				}
			}
		}
		for _, name := range []string{"q_pe", "k_pe"} {
			for r, x := range run(&mlaEdit{site: "model.layers.1.self_attn.rotary_emb", name: name, nan: true}) {
				for i, f := range x.F32() {
					if !math.IsNaN(float64(f)) {
						t.Fatalf("%+v rank %d: %s = NaN at rotary_emb, attn_out[%d] = %v", o, r, name, i, f)
					}
				}
			}
		}
		e.Close()
	}
}
