package check

import (
	"fmt"
	"math"

	"hsdb/engine/tensor"
	"hsdb/inspect/stats"
)

// Candidate kinds: what a captured tensor can turn out to be.
const (
	CandStream   = "stream"        // hidden_states + residual of a decoder layer = HF output_hidden_states[i+1]
	CandHidden   = "hidden_states" // vLLM's un-summed hidden_states half of a decoder layer (its MLP output)
	CandResidual = "residual"      // vLLM's residual half of a decoder layer
	CandNormed   = "normed stream" // a layer's stream with the final RMSNorm (model.norm) applied
	CandEmbed    = "embeddings"    // model.embed_tokens output = HF output_hidden_states[0]
	CandSite     = "site"          // any other site tensor of the right width
)

// Candidate is one tensor hsdb computes that a captured tensor is compared
// with: a kind and layer (the decoder-layer tensors), or any site tensor,
// either whole or one rank's column shard.
type Candidate struct {
	Kind   string // CandStream, ...
	Layer  int    // decoder layer; -1 for embeddings and sites outside layers
	Site   string // site path, "model.layers.29"
	Tensor string // tensor name at the site, "stream"
	Last   bool   // Layer is the model's last decoder layer
	// World > 0 makes this the column shard of rank Rank out of World
	// (columns Cols[0]:Cols[1] of the full tensor); 0 is the full tensor.
	World, Rank int
	Cols        [2]int
}

// String names the candidate in the user's terms: "stream of layer 29",
// "normed stream of layer 2 (model.norm output = HF's last
// output_hidden_states entry)", "stream of layer 0, columns 0:48 (rank 0 of
// tp 2)".
func (c Candidate) String() string {
	var s string
	switch c.Kind {
	case CandEmbed:
		s = "embeddings (model.embed_tokens = HF output_hidden_states[0])"
	case CandNormed:
		s = fmt.Sprintf("normed stream of layer %d (final norm applied)", c.Layer)
		if c.Last {
			s = fmt.Sprintf("normed stream of layer %d (model.norm output = HF's last output_hidden_states entry)", c.Layer)
		}
	case CandHidden:
		s = fmt.Sprintf("hidden_states of layer %d (vLLM's un-summed half: the MLP output, no residual)", c.Layer)
	case CandResidual:
		s = fmt.Sprintf("residual of layer %d (vLLM's residual half, without the MLP output)", c.Layer)
	case CandStream:
		s = fmt.Sprintf("stream of layer %d", c.Layer)
	default:
		s = c.Site + " " + c.Tensor
	}
	if c.World > 0 {
		s += fmt.Sprintf(", columns %d:%d (rank %d of tp %d)", c.Cols[0], c.Cols[1], c.Rank, c.World)
	}
	return s
}

// Score is how close a captured tensor is to a candidate over all finite
// elements: cosine similarity, max |capture − hsdb|, and max |hsdb| (the
// scale MaxAbs is judged against).
type Score struct {
	Cos    float64
	MaxAbs float64
	RefMax float64
}

// Rel returns MaxAbs / RefMax.
func (s Score) Rel() float64 {
	if s.RefMax == 0 {
		if s.MaxAbs == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return s.MaxAbs / s.RefMax
}

// Tolerance says when a capture is close to hsdb's tensor: cosine at least
// CosMin and max |Δ| at most Rel × max |hsdb|.
type Tolerance struct {
	CosMin float64
	Rel    float64
}

// ToleranceFor returns the default tolerance for a capture stored in dt:
// f32 captures must agree to cos 0.9999 and 1e-4 of the largest value (HF
// and hsdb agree to 1e-5 in f32, see engine/hf_test.go); bf16 and f16
// captures to cos 0.999 and 2⁻⁷ resp. 2⁻⁹ (a few rounding steps of the
// format's 8 resp. 11 significant bits).
func ToleranceFor(dt tensor.DType) Tolerance {
	switch dt {
	case tensor.BF16:
		return Tolerance{CosMin: 0.999, Rel: 1.0 / 128}
	case tensor.F16:
		return Tolerance{CosMin: 0.999, Rel: 1.0 / 512}
	case tensor.F8E4M3:
		return Tolerance{CosMin: 0.99, Rel: 1.0 / 8}
	}
	return Tolerance{CosMin: 0.9999, Rel: 1e-4}
}

// Close reports whether s is within the tolerance.
func (t Tolerance) Close(s Score) bool { return s.Cos >= t.CosMin && s.Rel() <= t.Rel }

// rowAcc accumulates one candidate's comparison with one target, per row.
type rowAcc struct {
	cand                        Candidate
	dot, tt, cc, maxAbs, refMax []float64
}

func newRowAcc(c Candidate, rows int) *rowAcc {
	return &rowAcc{cand: c, dot: make([]float64, rows), tt: make([]float64, rows), cc: make([]float64, rows),
		maxAbs: make([]float64, rows), refMax: make([]float64, rows)}
}

// add compares target x [rows, w] with columns [c0, c0+w) of ref [rows,
// full], skipping elements where either side is not finite.
func (a *rowAcc) add(x []float32, w int, ref []float32, full, c0 int) {
	rows := len(a.dot)
	for r := range rows {
		xr := x[r*w : (r+1)*w]
		cr := ref[r*full+c0 : r*full+c0+w]
		var dot, tt, cc, mx, rm float64
		for i, xv := range xr {
			a, b := float64(xv), float64(cr[i])
			if math.IsNaN(a) || math.IsInf(a, 0) || math.IsNaN(b) || math.IsInf(b, 0) {
				continue
			}
			dot += a * b
			tt += a * a
			cc += b * b
			mx = math.Max(mx, math.Abs(a-b))
			rm = math.Max(rm, math.Abs(b))
		}
		a.dot[r], a.tt[r], a.cc[r], a.maxAbs[r], a.refMax[r] = dot, tt, cc, mx, rm
	}
}

// score sums rows [r0, r1).
func (a *rowAcc) score(r0, r1 int) Score {
	var dot, tt, cc, mx, rm float64
	for r := r0; r < r1; r++ {
		dot += a.dot[r]
		tt += a.tt[r]
		cc += a.cc[r]
		mx = math.Max(mx, a.maxAbs[r])
		rm = math.Max(rm, a.refMax[r])
	}
	return Score{Cos: stats.Cosine(dot, tt, cc), MaxAbs: mx, RefMax: rm}
}

// rowGood reports whether row r alone is within tol, judged against the
// largest value of the whole tensor (refMax).
func (a *rowAcc) rowGood(r int, tol Tolerance, refMax float64) bool {
	return stats.Cosine(a.dot[r], a.tt[r], a.cc[r]) >= tol.CosMin && a.maxAbs[r] <= tol.Rel*refMax
}
