package check

import (
	"fmt"
	"math"
	"strings"

	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// saturation maxima: the largest finite value of each float format a
// hidden state passes through. A capture holding exactly ±max saturated
// (clamped) on the way; no computed hidden state lands on it by chance.
var saturation = []struct {
	name string
	max  float32
}{
	{"f16", 65504},
	{"bf16", 3.3895313892515355e38},
	{"f32", math.MaxFloat32},
}

// valueCondition names what is wrong with a captured tensor x [rows, w]
// stored in dt from its values alone, or "": all zeros, every element at
// a format's max magnitude somewhere (saturation), every row constant
// across channels, or every row the same vector.
func valueCondition(x []float32, rows, w int, dt tensor.DType) string {
	if len(x) == 0 || rows == 0 || w == 0 {
		return ""
	}
	zero := true
	for _, v := range x {
		if v != 0 {
			zero = false
			break
		}
	}
	if zero {
		return "all zeros"
	}
	if s := saturated(x, w, dt); s != "" {
		return s
	}
	constRows, sameRows := true, rows > 1
	for r := range rows {
		row := x[r*w : (r+1)*w]
		for _, v := range row[1:] {
			if v != row[0] {
				constRows = false
				break
			}
		}
		if r > 0 && sameRows {
			prev := x[(r-1)*w : r*w]
			for i := range row {
				if row[i] != prev[i] {
					sameRows = false
					break
				}
			}
		}
	}
	switch {
	case constRows && w > 1:
		return "every row constant across its channels (a broadcast scalar, not a hidden state)"
	case sameRows:
		return fmt.Sprintf("every one of the %d rows the same vector (one token's state repeated, or an uninitialized buffer)", rows)
	}
	return ""
}

// saturated reports values at a float format's max magnitude: how many,
// the format and the first (token, channel).
func saturated(x []float32, w int, dt tensor.DType) string {
	maxes := saturation
	if dt == tensor.F8E4M3 {
		maxes = append(maxes[:0:0], struct {
			name string
			max  float32
		}{"fp8 e4m3", 448})
	}
	for _, m := range maxes {
		n, first := 0, -1
		for i, v := range x {
			if v == m.max || v == -m.max {
				n++
				if first < 0 {
					first = i
				}
			}
		}
		if n > 0 {
			return fmt.Sprintf("%d value%s saturated at %s's max ±%.5g (first at token %d, channel %d)", n, plural(n), m.name, m.max, first/w, first%w)
		}
	}
	return ""
}

// valuesRule applies valueCondition to every float entry of a file (1-D
// per-token entries stacked first).
func valuesRule(l *Layout) (RuleResult, []Diagnosis) {
	res := RuleResult{Rule: capture.RuleValues}
	var bad []string
	var ds []Diagnosis
	for _, t := range buildValueTargets(l) {
		c := valueCondition(t.x, t.rows, t.w, t.dtype)
		if c == "" {
			continue
		}
		bad = append(bad, t.key+": "+c)
		ds = append(ds, Diagnosis{Sentence: t.key + " holds " + c, Cause: conditionCause(c)})
	}
	switch {
	case len(bad) > 0:
		res.Status, res.Detail = capture.Fail, strings.Join(bad, "; ")
	case len(l.Entries) == 0:
		res.Status, res.Detail = capture.Skip, "no entries"
	default:
		res.Status, res.Detail = capture.Pass, "no all-zero, constant or saturated entry"
	}
	return res, ds
}

// buildValueTargets are the entries as [rows, width] float tensors for
// value conditions: 2-D entries as they are, 1-D per-token entries of one
// width stacked.
func buildValueTargets(l *Layout) []*target {
	if len(l.Entries) > 1 && len(l.Entries[0].T.Shape) == 1 {
		w := l.Entries[0].T.Shape[0]
		t := &target{key: fmt.Sprintf("%s..%s (stacked)", l.Entries[0].Key, l.Entries[len(l.Entries)-1].Key), dtype: l.Entries[0].T.DType, rows: len(l.Entries), w: w}
		for _, e := range l.Entries {
			if len(e.T.Shape) != 1 || e.T.Shape[0] != w || !e.T.DType.IsFloat() {
				return nil
			}
			t.x = append(t.x, e.T.ToF32()...)
		}
		return []*target{t}
	}
	var out []*target
	for _, e := range l.Entries {
		if len(e.T.Shape) != 2 || !e.T.DType.IsFloat() {
			continue
		}
		out = append(out, &target{key: e.Key, dtype: e.T.DType, x: e.T.ToF32(), rows: e.T.Shape[0], w: e.T.Shape[1]})
	}
	return out
}

// conditionCause is the most likely cause of a value condition.
func conditionCause(c string) string {
	switch {
	case c == "all zeros":
		return "nothing was written into the buffer: the hook never fired for this layer, or the tensor was allocated and saved before the copy (compare layer labels with the hooks registered)"
	case strings.Contains(c, "saturated"):
		return "the values overflowed the format and were clamped to its max: a cast of large activations to a narrow dtype (fp16/bf16 overflow upstream, or a saturating fp8 cast)"
	case strings.HasPrefix(c, "every row constant"):
		return "a scalar (a norm, a mean or a fill value) was broadcast over the hidden dimension instead of the hidden state"
	}
	return "one row was written for every token: an index that never advanced, or a buffer filled once and reused"
}

// maskSpans returns the [start, end] (inclusive) runs of ones of a 0/1
// mask.
func maskSpans(m *tensor.Tensor) [][2]int {
	var out [][2]int
	n := m.Numel()
	for i := 0; i < n; {
		if m.At(i) != 1 {
			i++
			continue
		}
		j := i
		for j+1 < n && m.At(j+1) == 1 {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j + 1
	}
	return out
}

// spanCtx is what the ids say around one masked span [start, end]: for
// each shift s in -2..2 (index s+2) the token before the span's start
// (ids[start-1+s]) and its last token (ids[end+s]), where they exist.
type spanCtx struct {
	before, last [5]int32
	ok           [5]bool
}

// spanContexts returns the contexts of every span of ids.
func spanContexts(ids []int32, spans [][2]int) []spanCtx {
	out := make([]spanCtx, len(spans))
	for i, sp := range spans {
		for s := -2; s <= 2; s++ {
			bi, ei := sp[0]-1+s, sp[1]+s
			if bi >= 0 && ei >= 0 && ei < len(ids) {
				out[i].before[s+2], out[i].last[s+2], out[i].ok[s+2] = ids[bi], ids[ei], true
			}
		}
	}
	return out
}

// maskShift tests a loss_mask's alignment with input_ids from the ids
// alone: every masked span (an assistant turn) starts after the same
// template token and ends at the same end-of-turn token. With at least two
// spans (of one file, or of every file of a directory) it returns the
// shift d (0, ±1, ±2, smallest first) under which the spans agree, moving
// the mask by d tokens (mask'[i] = mask[i-d]), and the two tokens; ok is
// false when no shift makes them agree or fewer than two spans can be
// judged.
func maskShift(ctxs []spanCtx) (d int, before, last int32, ok bool) {
	if len(ctxs) < 2 {
		return 0, 0, 0, false
	}
	for _, s := range []int{0, 1, -1, 2, -2} {
		agree := true
		for _, c := range ctxs {
			if !c.ok[s+2] || c.before[s+2] != ctxs[0].before[s+2] || c.last[s+2] != ctxs[0].last[s+2] {
				agree = false
				break
			}
		}
		if agree {
			return s, ctxs[0].before[s+2], ctxs[0].last[s+2], true
		}
	}
	return 0, 0, 0, false
}

// maskShiftRule is the loss_mask rule over span contexts (of one file or
// of a directory's files, where says which).
func maskShiftRule(ctxs []spanCtx, where string) (RuleResult, *Diagnosis) {
	res := RuleResult{Rule: capture.RuleLossMask}
	d, b, e, ok := maskShift(ctxs)
	switch {
	case len(ctxs) < 2:
		res.Status, res.Detail = capture.Skip, fmt.Sprintf("%d span%s of loss_mask 1%s: alignment with input_ids is judged over two or more", len(ctxs), plural(len(ctxs)), where)
		return res, nil
	case !ok:
		res.Status, res.Detail = capture.Skip, fmt.Sprintf("%d spans of loss_mask 1%s start and end at different tokens under every shift up to ±2: alignment not judged", len(ctxs), where)
		return res, nil
	case d == 0:
		res.Status, res.Detail = capture.Pass, fmt.Sprintf("%d spans of loss_mask 1%s, each after token %d and ending at token %d", len(ctxs), where, b, e)
		return res, nil
	}
	res.Status = capture.Fail
	res.Detail = fmt.Sprintf("loss_mask is misaligned with input_ids by %+d: moved by %+d token%s, its %d spans%s each start after token %d and end at token %d", -d, d, plural(abs(d)), len(ctxs), where, b, e)
	return res, &Diagnosis{
		Sentence: fmt.Sprintf("loss_mask is shifted by %+d relative to input_ids (moving it by %+d aligns all %d spans%s: after token %d, ending at token %d)", -d, d, len(ctxs), where, b, e),
		Cause:    "the mask was computed for the labels (input_ids shifted by one) or cut at another offset than the ids, so training weights the wrong tokens (EAGLE #317, SpecForge #885)",
	}
}

// lossMaskRule checks the loss_mask against input_ids by maskShift over
// the file's own spans, and returns their contexts (for a directory's
// rule over every file).
func lossMaskRule(l *Layout) (RuleResult, *Diagnosis, []spanCtx) {
	if l.LossMask == nil || l.InputIDs == nil || l.LossMask.Numel() != l.idsLen() {
		return RuleResult{Rule: capture.RuleLossMask, Status: capture.Skip, Detail: "no loss_mask of len(" + l.IDsName() + ")"}, nil, nil
	}
	ctxs := spanContexts(l.ids(), maskSpans(l.LossMask))
	r, d := maskShiftRule(ctxs, "")
	return r, d, ctxs
}
