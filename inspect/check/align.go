package check

import (
	"math"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/stats"
)

// refKey names one decoder-layer tensor kept for alignment: the layer (-1
// for the embeddings) and the candidate kind.
type refKey struct {
	layer int
	kind  string
}

// refHook keeps the full tensors of chosen decoder-layer candidates of one
// prefill (the embeddings, a layer's hidden_states, residual or stream,
// and model.norm's output as the normed stream of layer normOf, the last
// loaded one).
type refHook struct {
	normOf int
	want   map[refKey]bool
	got    map[refKey]*tensor.Tensor
	err    error
}

// Want asks for the sites of the wanted tensors.
func (h *refHook) Want(ev *model.Event) bool {
	if ev.Step != 0 || h.err != nil {
		return false
	}
	s := ev.Site
	switch {
	case s.Path == "model.embed_tokens":
		return h.want[refKey{-1, CandEmbed}]
	case s.Path == "model.norm":
		return h.want[refKey{h.normOf, CandNormed}]
	case isLayerOutput(s):
		return h.want[refKey{s.Layer, CandStream}] || h.want[refKey{s.Layer, CandHidden}] || h.want[refKey{s.Layer, CandResidual}]
	}
	return false
}

// Visit gathers the wanted tensors of the site.
func (h *refHook) Visit(ev *model.Event, ranks []*model.RankView) error {
	s := ev.Site
	keep := func(k refKey, name string) {
		if !h.want[k] {
			return
		}
		g, err := capture.GatherSite(s.Path, name, ranks)
		if err != nil {
			h.err = err
			return
		}
		if g.T.DType == tensor.F32 {
			h.got[k] = g.T
		}
	}
	switch {
	case s.Path == "model.embed_tokens":
		keep(refKey{-1, CandEmbed}, "hidden_states")
	case s.Path == "model.norm":
		keep(refKey{h.normOf, CandNormed}, "hidden_states")
	default:
		for _, kind := range []string{CandHidden, CandResidual, CandStream} {
			keep(refKey{s.Layer, kind}, kind)
		}
	}
	return nil
}

// focusOf is the decoder-layer tensor an entry is realigned against: the
// one its label claims, else its best full-width candidate of a known kind.
func focusOf(m EntryMatch) (Candidate, bool) {
	if m.HasClaimed {
		return m.Claimed, true
	}
	switch c := m.Best; {
	case c.World > 0:
	case c.Kind == CandStream || c.Kind == CandHidden || c.Kind == CandResidual || c.Kind == CandEmbed || (c.Kind == CandNormed && c.Last):
		return c, true
	}
	return Candidate{}, false
}

// alignScore compares rows [x0, x0+n) of x [*, w] with rows [r0, r0+n) of
// ref [*, w], fitting a scale factor when fit is set.
func alignScore(x []float32, ref []float32, w, x0, r0, n int, fit bool) (Score, float64) {
	var dot, tt, cc float64
	for i := range n * w {
		a, b := float64(x[x0*w+i]), float64(ref[r0*w+i])
		if !finite(a) || !finite(b) {
			continue
		}
		dot += a * b
		tt += a * a
		cc += b * b
	}
	f := 1.0
	if fit {
		f = fitScale(dot, cc)
	}
	var mx, rm float64
	for i := range n * w {
		a, b := float64(x[x0*w+i]), f*float64(ref[r0*w+i])
		if !finite(a) || !finite(b) {
			continue
		}
		mx = math.Max(mx, math.Abs(a-b))
		rm = math.Max(rm, math.Abs(b))
	}
	return Score{Cos: stats.Cosine(dot, tt, cc), MaxAbs: mx, RefMax: rm}, f
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// alignedExplanations tries each row alignment of x against ref [refRows,
// w] plainly and with a fitted scale: mk builds the explanation; pairs
// are (x0, r0, n) row ranges compared as one block.
func alignedExplanations(t *target, ref *tensor.Tensor, c Candidate, tol Tolerance, consts map[string]float64,
	mk func(*Explanation), blocks [][3]int) []Explanation {
	if ref == nil || ref.Cols() != t.w {
		return nil
	}
	rv := ref.F32()
	var out []Explanation
	for _, fit := range []bool{false, true} {
		var dot, tt, cc float64
		f := 1.0
		// one factor over all blocks: fit on their union
		if fit {
			for _, b := range blocks {
				for i := range b[2] * t.w {
					a, r := float64(t.x[b[0]*t.w+i]), float64(rv[b[1]*t.w+i])
					if finite(a) && finite(r) {
						dot, cc = dot+a*r, cc+r*r
					}
				}
			}
			f = fitScale(dot, cc)
			if math.Abs(f-1) <= tol.Rel {
				continue
			}
		}
		dot, tt, cc = 0, 0, 0
		var mx, rm float64
		for _, b := range blocks {
			for i := range b[2] * t.w {
				a, r := float64(t.x[b[0]*t.w+i]), f*float64(rv[b[1]*t.w+i])
				if !finite(a) || !finite(r) {
					continue
				}
				dot, tt, cc = dot+a*r, tt+a*a, cc+r*r
				mx, rm = math.Max(mx, math.Abs(a-r)), math.Max(rm, math.Abs(r))
			}
		}
		s := Score{Cos: stats.Cosine(dot, tt, cc), MaxAbs: mx, RefMax: rm}
		x := Explanation{Cand: c, Scale: f, Score: s, Close: tol.Close(s)}
		if fit {
			x.Const = nameConstant(f, consts, tol.Rel)
		}
		mk(&x)
		out = append(out, x)
	}
	return out
}

// shiftExplanations reads x's rows shifted by ±1..±4 against ref (the same
// tokens' tensor).
func shiftExplanations(t *target, ref *tensor.Tensor, c Candidate, tol Tolerance, consts map[string]float64) []Explanation {
	var out []Explanation
	for _, s := range []int{1, -1, 2, -2, 3, -3, 4, -4} {
		n := t.rows - abs(s)
		if n < 2 || ref.Rows() != t.rows {
			continue
		}
		x0, r0 := 0, s
		if s < 0 {
			x0, r0 = -s, 0
		}
		out = append(out, alignedExplanations(t, ref, c, tol, consts, func(x *Explanation) { x.Align, x.Shift = AlignShift, s },
			[][3]int{{x0, r0, n}})...)
	}
	return out
}

// orderExplanation finds, for a file of several sequences (lens), the
// order in which hsdb's sequences fill the file's rows: greedily, at each
// offset the unused sequence whose rows match best. It returns nothing
// when the order found is the identity or no order covers the rows.
func orderExplanation(t *target, ref *tensor.Tensor, c Candidate, lens []int, tol Tolerance, consts map[string]float64) []Explanation {
	if len(lens) < 2 || ref.Rows() != t.rows {
		return nil
	}
	starts := make([]int, len(lens))
	for i := 1; i < len(lens); i++ {
		starts[i] = starts[i-1] + lens[i-1]
	}
	rv := ref.F32()
	used := make([]bool, len(lens))
	var order []int
	var blocks [][3]int
	off := 0
	for range lens {
		bj, bc := -1, -2.0
		for j, n := range lens {
			if used[j] || off+n > t.rows {
				continue
			}
			s, _ := alignScore(t.x, rv, t.w, off, starts[j], n, false)
			if s.Cos > bc {
				bj, bc = j, s.Cos
			}
		}
		if bj < 0 {
			return nil
		}
		used[bj] = true
		order = append(order, bj)
		blocks = append(blocks, [3]int{off, starts[bj], lens[bj]})
		off += lens[bj]
	}
	ident := true
	for i, j := range order {
		ident = ident && i == j
	}
	if ident {
		return nil
	}
	return alignedExplanations(t, ref, c, tol, consts, func(x *Explanation) { x.Align, x.Order = AlignOrder, order }, blocks)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// alignInputs are the facts realignment needs: the file's ids, the
// sequences they were run as, and the model's BOS when known.
type alignInputs struct {
	ids     []int32
	lens    []int
	bos     int32
	hasBOS  bool
	normOf  int // the layer model.norm normalizes (normLayer)
	prefill func(seqs [][]int32, h model.Hook) error
}

// realign scores every target that did not match as claimed (or,
// unlabelled, as a layer's stream) under the row alignments: shifts of
// ±1..±4 rows and, for several sequences, another sequence order, on the
// file's own ids; with a known BOS, the ids with BOS prepended (labels
// saved as input_ids, a dropped BOS row) and, when the ids start with BOS,
// without it. Each alignment is one extra prefill, run only when some
// target needs it: one not solved (a close reading found already) and
// not solved by the alignments before. It returns the extra explanations
// per target index.
func realign(in alignInputs, targets []*target, ms []EntryMatch, tols []Tolerance, consts map[string]float64, solved []bool) (map[int][]Explanation, error) {
	focus := map[int]Candidate{}
	want := map[refKey]bool{}
	for i, t := range targets {
		if ms[i].HasClaimed && ms[i].Close || t.skip || solved[i] {
			continue
		}
		if !ms[i].HasClaimed && ms[i].Label < 0 && ms[i].Best.Kind == CandStream && ms[i].Best.World == 0 && ms[i].Tol.Close(ms[i].BestScore) {
			continue
		}
		c, ok := focusOf(ms[i])
		if !ok {
			continue
		}
		focus[i] = c
		want[refKey{c.Layer, c.Kind}] = true
	}
	if len(focus) == 0 {
		return nil, nil
	}
	run := func(seqs [][]int32) (map[refKey]*tensor.Tensor, error) {
		h := &refHook{normOf: in.normOf, want: want, got: map[refKey]*tensor.Tensor{}}
		if err := in.prefill(seqs, h); err != nil {
			return nil, err
		}
		return h.got, h.err
	}
	var seqs [][]int32
	off := 0
	for _, n := range in.lens {
		seqs = append(seqs, in.ids[off:off+n])
		off += n
	}
	same, err := run(seqs)
	if err != nil {
		return nil, err
	}
	out := map[int][]Explanation{}
	for i, c := range focus {
		t, ref := targets[i], same[refKey{c.Layer, c.Kind}]
		if ref == nil {
			continue
		}
		out[i] = append(out[i], shiftExplanations(t, ref, c, tols[i], consts)...)
		out[i] = append(out[i], orderExplanation(t, ref, c, in.lens, tols[i], consts)...)
		if anyCloseExplanation(out[i]) {
			delete(focus, i)
		}
	}
	if !in.hasBOS || len(in.lens) != 1 || len(focus) == 0 {
		return out, nil
	}
	n := len(in.ids)
	with := append([]int32{in.bos}, in.ids...)
	refs, err := run([][]int32{with})
	if err != nil {
		return nil, err
	}
	for i, c := range focus {
		t, ref := targets[i], refs[refKey{c.Layer, c.Kind}]
		if ref == nil || ref.Rows() != n+1 {
			continue
		}
		out[i] = append(out[i], alignedExplanations(t, ref, c, tols[i], consts, func(x *Explanation) { x.Align = AlignLabels }, [][3]int{{0, 0, n}})...)
		out[i] = append(out[i], alignedExplanations(t, ref, c, tols[i], consts, func(x *Explanation) { x.Align = AlignBOSDropped }, [][3]int{{0, 1, n}})...)
	}
	if in.ids[0] != in.bos || n < 3 {
		return out, nil
	}
	refs, err = run([][]int32{in.ids[1:]})
	if err != nil {
		return nil, err
	}
	for i, c := range focus {
		t, ref := targets[i], refs[refKey{c.Layer, c.Kind}]
		if ref == nil || ref.Rows() != n-1 {
			continue
		}
		out[i] = append(out[i], alignedExplanations(t, ref, c, tols[i], consts, func(x *Explanation) { x.Align = AlignBOSAdded }, [][3]int{{1, 0, n - 1}})...)
	}
	return out, nil
}
