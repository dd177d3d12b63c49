package arch_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// mlaEdit is a hook that zeroes one tensor of one site on every rank, then
// at layer 1's attention checks what attention saw and returned: the shown
// q, k, v and attn_out must agree with a float64 causal attention computed
// here, and after the edit the zeroed part must be zero in what attention
// used.
type mlaEdit struct {
	o          engine.Options
	site, name string
	tol        float64
	edited     int
	checked    int
	zeroOut    bool // expect attn_out == 0 (v zeroed)
	qPe, kPe   bool // expect q's / k's rotary columns zero
	nope       int
}

const mlaAttn = "model.layers.1.self_attn.attn"

func (h *mlaEdit) Want(ev *model.Event) bool {
	return ev.Site.Path == h.site || ev.Site.Path == mlaAttn
}

func (h *mlaEdit) Visit(ev *model.Event, ranks []*model.RankView) error {
	for _, v := range ranks {
		if ev.Site.Path == mlaAttn {
			if err := h.check(ev.Batch, v); err != nil {
				return fmt.Errorf("%+v rank %d after zeroing %s.%s: %w", h.o, v.Rank, h.site, h.name, err)
			}
			h.checked++
			continue
		}
		st, ok := v.Tensor(h.name)
		if !ok || !st.Writable || st.T == nil {
			return errors.New(h.site + " shows no writable " + h.name)
		}
		s := st.T.Shape()
		v.Device.CopyRows(st.T, 0, v.Device.Alloc(s...), 0, s[0])
		h.edited++
	}
	return nil
}

func (h *mlaEdit) check(b *model.Batch, v *model.RankView) error {
	get := func(name string) (*tensor.Tensor, *model.AttnGeometry) {
		st, ok := v.Tensor(name)
		if !ok {
			return nil, nil
		}
		s := st.T.Shape()
		return v.Device.ToHost(st.T, 0, s[0], 0, tensor.Numel(s[1:])), st.Attn
	}
	q, g := get("q")
	k, _ := get("k")
	val, _ := get("v")
	out, _ := get("attn_out")
	if q == nil || k == nil || val == nil || out == nil || g == nil {
		return errors.New("the attention site lacks q, k, v or attn_out")
	}
	T, H, dk := q.Shape[0], g.Heads, g.DK
	dv := val.Shape[1] / H
	qv, kv, vv, ov := q.F32(), k.F32(), val.F32(), out.F32()
	for i, x := range ov {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("attn_out[%d] = %v", i, x)
		}
		if h.zeroOut && x != 0 {
			return fmt.Errorf("v = 0, yet attn_out[%d] = %v", i, x)
		}
	}
	for t := range T {
		for hd := range H {
			for j := h.nope; j < dk; j++ {
				if h.qPe && qv[(t*H+hd)*dk+j] != 0 {
					return fmt.Errorf("q_pe = 0, yet attention's q[%d, head %d, %d] = %v", t, hd, j, qv[(t*H+hd)*dk+j])
				}
				if h.kPe && kv[(t*H+hd)*dk+j] != 0 {
					return fmt.Errorf("k_pe = 0, yet attention's k[%d, head %d, %d] = %v", t, hd, j, kv[(t*H+hd)*dk+j])
				}
			}
		}
	}
	// Causal attention per sequence: token t at position p attends to the
	// tokens of its sequence at positions <= p (a prefill: the keys are
	// the step's own rows).
	seq := b.SeqOf()
	want := make([]float32, len(ov))
	for t := range T {
		for hd := range H {
			var keys []int
			for u := range T {
				if seq[u] == seq[t] && b.Pos[u] <= b.Pos[t] {
					keys = append(keys, u)
				}
			}
			sc := make([]float64, len(keys))
			m := math.Inf(-1)
			for i, u := range keys {
				s := 0.0
				for j := range dk {
					s += float64(qv[(t*H+hd)*dk+j]) * float64(kv[(u*H+hd)*dk+j])
				}
				sc[i] = s * float64(g.Scale)
				m = max(m, sc[i])
			}
			sum := 0.0
			for i := range sc {
				sc[i] = math.Exp(sc[i] - m)
				sum += sc[i]
			}
			for j := range dv {
				o := 0.0
				for i, u := range keys {
					o += sc[i] / sum * float64(vv[(u*H+hd)*dv+j])
				}
				want[(t*H+hd)*dv+j] = float32(o)
			}
		}
	}
	if h.zeroOut {
		return nil // all zero, checked above; the reference is zero too
	}
	return enginetest.CheckClose(ov, want, h.tol)
}

// TestDeepseekMLAEditsFlowOn: MLA writes keys and values straight into the
// KV cache and rotates q in place, making the kv_b_proj and rotary_emb
// site tensors only for a hook; what a hook writes there must still be
// what attention uses. At layer 1's attention site, q, k, v and attn_out
// must agree with a float64 causal attention computed here, unedited and
// after each edit; zeroing v must make attn_out exactly 0 (a convex sum of
// zero rows), zeroing q_pe or k_pe must leave those columns zero in the q
// and k attention shows. On the CPU at --tp 1 and 2 and, where present,
// CUDA (f32 at --tp 1 and 2, and bf16, whose value width 20 takes the
// kernel's element copy).
func TestDeepseekMLAEditsFlowOn(t *testing.T) {
	c := parseCfg(t, v3Config)
	w := randWeights(c, 13, 0.05)
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
		tol := 1e-4
		if o.DType == tensor.BF16 {
			tol = 2e-2 // probabilities and output rounded to bf16
		}
		for _, h := range []*mlaEdit{
			{},
			{site: "model.layers.1.self_attn.kv_b_proj", name: "v", zeroOut: true},
			{site: "model.layers.1.self_attn.rotary_emb", name: "q_pe", qPe: true},
			{site: "model.layers.1.self_attn.rotary_emb", name: "k_pe", kPe: true},
		} {
			h.o, h.tol, h.nope = o, tol, c.Nope
			if _, err := e.Prefill(prompts, h, false); err != nil {
				t.Fatal(err)
			}
			if h.checked != o.TP || (h.site != "" && h.edited != o.TP) {
				t.Fatalf("%+v %s.%s: %d checks, %d edits for %d ranks", o, h.site, h.name, h.checked, h.edited, o.TP)
			}
		}
		e.Close()
	}
}
