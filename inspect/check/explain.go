package check

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Row alignments an Explanation can apply before comparing.
const (
	AlignNone       = ""            // rows as given
	AlignShift      = "shift"       // row r holds the candidate's row r+Shift
	AlignOrder      = "order"       // the file's sequences are hsdb's in another order
	AlignLabels     = "labels"      // input_ids are the labels: the rows are the states of [BOS] + input_ids[:-1]
	AlignBOSDropped = "bos dropped" // the rows are the states of [BOS] + input_ids without the BOS row
	AlignBOSAdded   = "bos added"   // input_ids start with a BOS the states were computed without
)

// Explanation is one scored reading of what a captured tensor holds: a
// candidate hsdb computes (Cand), read under a row alignment (Align) and a
// fitted scale factor (Scale: the capture ≈ Scale × candidate, fitted by
// least squares; 1 when not fitted). Score is measured on the aligned rows
// after scaling; Close says it is within the capture dtype's tolerance.
type Explanation struct {
	Cand  Candidate
	Scale float64
	// Const names a config constant Scale equals within the tolerance
	// ("1/routed_scaling_factor"), or "".
	Const string
	Align string
	Shift int   // AlignShift: rows; positive means row r holds token r+Shift
	Order []int // AlignOrder: the file's sequence j holds hsdb's sequence Order[j]
	Score Score
	Close bool
}

// scaled reports whether the explanation applies a scale factor.
func (x Explanation) scaled() bool { return x.Scale != 1 }

// String names the explanation in the user's terms: "stream of layer 1
// scaled by 0.4 (= 1/routed_scaling_factor)", "stream of layer 2 with rows
// shifted by +1 (row i holds token i+1)".
func (x Explanation) String() string {
	s := x.Cand.String()
	switch x.Align {
	case AlignShift:
		s += fmt.Sprintf(" with rows shifted by %+d (row i holds token i%+d)", x.Shift, x.Shift)
	case AlignOrder:
		s += fmt.Sprintf(" with the sequences in order %s (input_ids in order %s)", joinInts(x.Order), joinInts(identity(len(x.Order))))
	case AlignLabels:
		s += " of [BOS] + input_ids[:-1] (input_ids hold the labels, shifted left by one)"
	case AlignBOSDropped:
		s += " of [BOS] + input_ids with the BOS row dropped (BOS missing from the file)"
	case AlignBOSAdded:
		s += " of input_ids[1:] (the file's leading BOS was not in the forward pass)"
	}
	if x.scaled() {
		s += fmt.Sprintf(" scaled by %.4g", x.Scale)
		if x.Const != "" {
			s += " (= " + x.Const + ")"
		}
	}
	return s
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// explanationLess orders explanations best first: close before not close,
// then higher cosine (to 1e-6), then fewer transformations (a plain reading
// before a scaled or realigned one), then smaller relative max |Δ|.
func explanationLess(a, b Explanation) bool {
	if a.Close != b.Close {
		return a.Close
	}
	if d := a.Score.Cos - b.Score.Cos; math.Abs(d) > 1e-6 {
		return d > 0
	}
	if ta, tb := a.transforms(), b.transforms(); ta != tb {
		return ta < tb
	}
	if ka, kb := kindRank(a.Cand), kindRank(b.Cand); ka != kb {
		return ka < kb
	}
	return a.Score.Rel() < b.Score.Rel()
}

func (x Explanation) transforms() int {
	n := 0
	if x.scaled() {
		n++
	}
	if x.Align != AlignNone {
		n++
	}
	if x.Cand.World > 0 {
		n++
	}
	return n
}

// kindRank prefers a decoder layer's named tensors over an arbitrary site
// tensor holding the same values (model.layers.1.mlp's output is layer 1's
// hidden_states).
func kindRank(c Candidate) int {
	if c.Kind == CandSite {
		return 1
	}
	return 0
}

// scaleConstants are the factors a hidden state is known to be scaled by,
// from the config: c and 1/c for routed_scaling_factor (vLLM's fp16
// DeepSeek path divides the residual by it, vLLM #13232, #14809) and any
// other *scal*/*multiplier* float of config.json, sqrt(hidden_size)
// (embedding scaling as in Gemma), and 2 (a residual added twice).
func scaleConstants(hidden int, consts map[string]float64) map[string]float64 {
	out := map[string]float64{"2": 2, "1/2": 0.5}
	if hidden > 0 {
		out["sqrt(hidden_size)"] = math.Sqrt(float64(hidden))
		out["1/sqrt(hidden_size)"] = 1 / math.Sqrt(float64(hidden))
	}
	for k, v := range consts {
		if v == 0 || v == 1 || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		out[k] = v
		out["1/"+k] = 1 / v
	}
	return out
}

// nameConstant returns the name of the known constant within relative tol
// of f (the closest), or "".
func nameConstant(f float64, consts map[string]float64, tol float64) string {
	best, bd := "", math.Inf(1)
	for _, k := range slices.Sorted(maps.Keys(consts)) {
		d := math.Abs(f/consts[k] - 1)
		if d <= tol && d < bd {
			best, bd = k, d
		}
	}
	return best
}

// fitScale returns the least-squares factor a of x ≈ a·c from Σx·c and
// Σc², or 1 when c is all zeros.
func fitScale(dot, cc float64) float64 {
	if cc == 0 {
		return 1
	}
	return dot / cc
}

// scaleRel is the relative error left after fitting x ≈ a·c: the RMS of
// x − a·c over the RMS of a·c, from Σx·c, Σx² and Σc².
func scaleRel(dot, tt, cc float64) float64 {
	if cc == 0 || dot == 0 {
		return math.Inf(1)
	}
	res := math.Max(tt-dot*dot/cc, 0)
	return math.Sqrt(res) / math.Abs(dot/math.Sqrt(cc))
}

// accExplanations reads every candidate compared during the pass as an
// explanation: plainly, and with a fitted scale factor when the factor is
// not 1 within the tolerance (the cosine is then unchanged and the
// residual left after scaling must be within the tolerance too).
func accExplanations(t *target, tol Tolerance, consts map[string]float64) []Explanation {
	var out []Explanation
	for _, a := range t.accs {
		s := a.score(0, t.rows)
		out = append(out, Explanation{Cand: a.cand, Scale: 1, Score: s, Close: tol.Close(s)})
		var dot, tt, cc float64
		for r := range t.rows {
			dot, tt, cc = dot+a.dot[r], tt+a.tt[r], cc+a.cc[r]
		}
		f := fitScale(dot, cc)
		if math.Abs(f-1) <= tol.Rel || f == 0 {
			continue
		}
		rel := scaleRel(dot, tt, cc)
		out = append(out, Explanation{Cand: a.cand, Scale: f, Const: nameConstant(f, consts, tol.Rel),
			Score: Score{Cos: s.Cos, MaxAbs: rel * math.Abs(f) * s.RefMax, RefMax: math.Abs(f) * s.RefMax},
			Close: s.Cos >= tol.CosMin && rel <= tol.Rel})
	}
	return out
}

// topExplanations sorts xs best first and keeps the first n, at most one
// per rendering (a candidate compared twice reads once).
func topExplanations(xs []Explanation, n int) []Explanation {
	sort.SliceStable(xs, func(i, j int) bool { return explanationLess(xs[i], xs[j]) })
	var out []Explanation
	seen := map[string]bool{}
	for _, x := range xs {
		k := x.String()
		if seen[k] || aliasOf(x, out) {
			continue
		}
		seen[k] = true
		out = append(out, x)
		if len(out) == n {
			break
		}
	}
	return out
}

// explanationCause is the most likely cause of a capture labelled layer
// label (-1 unlabelled) that is best explained by x.
func explanationCause(label int, x Explanation) string {
	var causes []string
	if x.Align != AlignNone || x.Cand.World > 0 || x.Cand.Kind != CandStream || x.Cand.Layer != label {
		if c := matchCause(label, x.Cand); !(x.Cand.Kind == CandStream && x.Cand.Layer == label && x.Cand.World == 0) {
			causes = append(causes, c)
		}
	}
	switch x.Align {
	case AlignShift:
		causes = append(causes, fmt.Sprintf("the rows are misaligned with input_ids by %+d: hidden states and ids were cut at different offsets (a position slip between sequences; speculators #279, PR #365; EAGLE #317)", x.Shift))
	case AlignOrder:
		causes = append(causes, fmt.Sprintf("the sequences of the batch were written in another order than their input_ids (order %s: string-sorted request ids?; speculators #279, PR #365)", joinInts(x.Order)))
	case AlignLabels:
		causes = append(causes, "the labels (input_ids shifted left by one) were saved as input_ids (EAGLE #317; speculators #279)")
	case AlignBOSDropped:
		causes = append(causes, "the forward pass saw a BOS that the file's input_ids and rows leave out")
	case AlignBOSAdded:
		causes = append(causes, "the file's input_ids start with a BOS the forward pass never saw (added after the capture)")
	}
	if x.scaled() {
		c := fmt.Sprintf("the values are scaled by %.4g", x.Scale)
		switch {
		case strings.Contains(x.Const, "routed_scaling_factor"):
			c += fmt.Sprintf(" (%s): vLLM's fp16 DeepSeek path divides the residual by routed_scaling_factor to avoid overflow (vLLM #13232, #14809); undo it before saving", x.Const)
		case x.Const != "":
			c += " (" + x.Const + ")"
		default:
			c += ": a stray scale in the capture path"
		}
		causes = append(causes, c)
	}
	return strings.Join(causes, "; and ")
}

// aliasOf reports whether x reads the same values as one of kept under
// another name (layer 0's stream is layer 1's input_layernorm residual):
// equal scores under the same transformations. The first, better named,
// is kept.
func aliasOf(x Explanation, kept []Explanation) bool {
	for _, k := range kept {
		if k.Align == x.Align && k.Shift == x.Shift && k.scaled() == x.scaled() && k.Cand.World == x.Cand.World && k.Cand.Rank == x.Cand.Rank &&
			math.Abs(k.Score.Cos-x.Score.Cos) <= 1e-9 && math.Abs(k.Score.MaxAbs-x.Score.MaxAbs) <= 1e-9*math.Max(k.Score.RefMax, 1e-30) &&
			math.Abs(k.Score.RefMax-x.Score.RefMax) <= 1e-9*math.Max(k.Score.RefMax, 1e-30) {
			return true
		}
	}
	return false
}
