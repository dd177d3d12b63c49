package check

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// routerKey matches captured router choices [tokens, top_k]: hsdb's site
// key "model.layers.3.mlp.gate:topk_ids", or "router.3.topk_ids" as the
// fixtures name HF's.
var routerKey = regexp.MustCompile(`^(?:model\.layers\.(\d+)\.mlp\.gate:|router\.(\d+)\.)(topk_ids|topk_weights)$`)

// routerEntry is one layer's captured expert choice: ids [tokens, top_k]
// (integer) and, when captured, their weights [tokens, top_k].
type routerEntry struct {
	key     string
	layer   int
	ids     *tensor.Tensor
	weights *tensor.Tensor
}

// routerEntries finds the router choices a file holds, by layer in file
// order; weights without ids are left out.
func routerEntries(cf *CaptureFile) []routerEntry {
	if cf.Root == nil || cf.Root.Kind != KindDict {
		return nil
	}
	byLayer := map[int]*routerEntry{}
	var order []int
	for i, k := range cf.Root.Keys {
		m := routerKey.FindStringSubmatch(k)
		v := cf.Root.Fields[i]
		if m == nil || v.Kind != KindTensor || len(v.Tensor.Shape) != 2 {
			continue
		}
		n, _ := strconv.Atoi(m[1] + m[2])
		e := byLayer[n]
		if e == nil {
			e = &routerEntry{layer: n}
			byLayer[n] = e
			order = append(order, n)
		}
		switch {
		case m[3] == "topk_ids" && !v.Tensor.DType.IsFloat():
			e.key, e.ids = k, v.Tensor
		case m[3] == "topk_weights" && v.Tensor.DType.IsFloat():
			e.weights = v.Tensor
		}
	}
	var out []routerEntry
	for _, n := range order {
		if e := byLayer[n]; e.ids != nil {
			out = append(out, *e)
		}
	}
	return out
}

// routerHook gathers the prefill's topk_ids at the gates of chosen layers.
type routerHook struct {
	want map[int]bool
	got  map[int]*tensor.Tensor // topk_ids
	gotW map[int]*tensor.Tensor // topk_weights
	err  error
}

func gatePath(layer int) string { return fmt.Sprintf("model.layers.%d.mlp.gate", layer) }

// Want asks for the gates of the wanted layers.
func (h *routerHook) Want(ev *model.Event) bool {
	return ev.Step == 0 && h.err == nil && ev.Site.Layer >= 0 && h.want[ev.Site.Layer] && ev.Site.Path == gatePath(ev.Site.Layer)
}

// Visit keeps the gate's topk_ids and topk_weights (replicated).
func (h *routerHook) Visit(ev *model.Event, ranks []*model.RankView) error {
	for _, name := range []string{"topk_ids", "topk_weights"} {
		g, err := capture.GatherSite(ev.Site.Path, name, ranks)
		if err != nil {
			h.err = err
			return nil
		}
		if name == "topk_ids" {
			h.got[ev.Site.Layer] = g.T
		} else {
			h.gotW[ev.Site.Layer] = g.T
		}
	}
	return nil
}

// routerRule compares the file's router choices with hsdb's on the file's
// ids (run as lens), per token as sets (HF's torch.topk is unsorted). It
// returns the rule and, on a difference, the diagnosis naming the layer
// and first token.
func routerRule(t *capture.Target, ids []int32, lens []int, rs []routerEntry) (RuleResult, *Diagnosis) {
	res := RuleResult{Rule: capture.RuleRouter}
	h := &routerHook{want: map[int]bool{}, got: map[int]*tensor.Tensor{}, gotW: map[int]*tensor.Tensor{}}
	for _, r := range rs {
		h.want[r.layer] = true
	}
	var seqs [][]int32
	off := 0
	for _, n := range lens {
		seqs = append(seqs, ids[off:off+n])
		off += n
	}
	if err := t.Prefill(seqs, h); err != nil || h.err != nil {
		res.Status, res.Detail = capture.Fail, fmt.Sprintf("the forward pass failed: %v", firstErr(err, h.err))
		return res, nil
	}
	var bad, ok []string
	var d *Diagnosis
	for _, r := range rs {
		ref := h.got[r.layer]
		switch {
		case ref == nil:
			bad = append(bad, fmt.Sprintf("%s: layer %d has no router (a dense layer, or no layer %d)", r.key, r.layer, r.layer))
			continue
		case !slices.Equal(ref.Shape, r.ids.Shape):
			bad = append(bad, fmt.Sprintf("%s is %s, hsdb's topk_ids %s", r.key, tensor.ShapeString(r.ids.Shape), tensor.ShapeString(ref.Shape)))
			continue
		}
		T, k := ref.Shape[0], ref.Shape[1]
		diff, first := 0, -1
		var fileSet, refSet []int64
		wdiff, wfirst, wmax := 0, -1, 0.0
		refW, tol := h.gotW[r.layer], 1e-3
		if r.weights != nil && r.weights.DType != tensor.F32 {
			tol = 1e-2
		}
		for tok := range T {
			a, b := make([]int64, k), make([]int64, k)
			for j := range k {
				a[j], b[j] = r.ids.Int(tok*k+j), ref.Int(tok*k+j)
			}
			sa, sb := slices.Clone(a), slices.Clone(b)
			slices.Sort(sa)
			slices.Sort(sb)
			if !slices.Equal(sa, sb) {
				diff++
				if first < 0 {
					first, fileSet, refSet = tok, sa, sb
				}
				continue
			}
			if r.weights == nil || refW == nil || !slices.Equal(r.weights.Shape, refW.Shape) {
				continue
			}
			// the same experts: compare each expert's weight
			dw := 0.0
			for j := range k {
				jj := slices.Index(b, a[j])
				dw = max(dw, abs64(r.weights.At(tok*k+j)-refW.At(tok*k+jj)))
			}
			if !(dw <= tol) {
				wdiff++
				if wfirst < 0 {
					wfirst = tok
				}
				wmax = max(wmax, dw)
			}
		}
		if diff == 0 && wdiff > 0 {
			bad = append(bad, fmt.Sprintf("layer %d: the same experts, other weights on %d of %d tokens (first token %d, max |Δ| %.3g)", r.layer, wdiff, T, wfirst, wmax))
			if d == nil {
				d = &Diagnosis{Sentence: fmt.Sprintf("the router at layer %d chose the model's experts but weighted them differently on %d of %d tokens (first token %d, max |Δ| %.3g)", r.layer, wdiff, T, wfirst, wmax),
					Cause: "the routing weights differ: the router's scoring (softmax instead of sigmoid), norm_topk_prob or routed_scaling_factor (TRT-Model-Connect #662)"}
			}
			continue
		}
		if diff == 0 {
			ok = append(ok, fmt.Sprintf("layer %d", r.layer))
			continue
		}
		bad = append(bad, fmt.Sprintf("layer %d: %d of %d tokens choose other experts (first token %d: file %s, hsdb %s)", r.layer, diff, T, first, idList(fileSet), idList(refSet)))
		if d == nil {
			d = &Diagnosis{Sentence: fmt.Sprintf("the router at layer %d chose other experts than the model's for %d of %d tokens (first token %d: %s, the model %s)", r.layer, diff, T, first, idList(fileSet), idList(refSet)),
				Cause: "routing differs: the router's scoring (sigmoid vs softmax), its e_score_correction_bias, grouped top-k (n_group, topk_group) or another gate weight (TRT-Model-Connect #662)"}
		}
	}
	if len(bad) > 0 {
		res.Status, res.Detail = capture.Fail, strings.Join(bad, "; ")
		return res, d
	}
	res.Status, res.Detail = capture.Pass, "the same experts as the model's on every token at "+strings.Join(ok, ", ")
	return res, nil
}

// idList renders expert ids as a Python list prints them: "[2, 5]".
func idList(ids []int64) string {
	s := make([]string, len(ids))
	for i, x := range ids {
		s[i] = strconv.FormatInt(x, 10)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
