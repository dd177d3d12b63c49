package stats

import (
	"math"
	"sort"
)

// Channel is one feature column of a [tokens, features] tensor with its
// largest finite magnitude: Value is the signed element of largest |value|
// in the column and Row the row of the data where it first occurs (a token
// of the batch only where every token has a row; see debug.TopEntry). Sun et al.
// 2024, "Massive Activations in Large Language Models", find such channels
// at magnitudes about 1e3-1e4 × the median |value|.
type Channel struct {
	Col   int     `json:"channel"`
	Row   int     `json:"row"`
	Value float64 `json:"value"`
	// Ratio is |Value| divided by the median |value| of the whole tensor;
	// nil when that median is 0 (most entries are zero: no ratio means
	// anything, and 0/0 would be NaN).
	Ratio *float64 `json:"ratio_to_median"`
}

// TopChannels returns the k columns of v ([rows, cols] row-major) with the
// largest finite |value|, largest first (ties: lower column first).
// Non-finite elements are skipped (Stats counts them). Columns are numbered
// from colBase (a shard's first column in the full tensor).
func TopChannels(v []float32, rows, cols, k, colBase int) []Channel {
	if rows*cols != len(v) || cols == 0 {
		return nil
	}
	best := make([]Channel, cols)
	seen := make([]bool, cols)
	for r := range rows {
		for c, x := range v[r*cols : (r+1)*cols] {
			f := float64(x)
			if f != f || math.IsInf(f, 0) {
				continue
			}
			if !seen[c] || math.Abs(f) > math.Abs(best[c].Value) {
				best[c] = Channel{Col: c, Row: r, Value: f}
				seen[c] = true
			}
		}
	}
	var out []Channel
	for c := range best {
		if seen[c] {
			out = append(out, best[c])
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return math.Abs(out[i].Value) > math.Abs(out[j].Value) })
	if len(out) > k {
		out = out[:k]
	}
	med, _ := MedianAbs(v) // out is empty when there is no finite element
	for i := range out {
		out[i].Col += colBase
		if med > 0 {
			r := math.Abs(out[i].Value) / med
			out[i].Ratio = &r
		}
	}
	return out
}

// MedianAbs returns the median of |x| over the finite elements of v (the
// mean of the two middle values for an even count, as numpy.median) and
// true, or 0 and false when v has no finite element (no median exists:
// callers report it as undefined, never as 0).
func MedianAbs(v []float32) (float64, bool) {
	a := make([]float64, 0, len(v))
	for _, x := range v {
		f := math.Abs(float64(x))
		if f == f && !math.IsInf(f, 0) {
			a = append(a, f)
		}
	}
	if len(a) == 0 {
		return 0, false
	}
	sort.Float64s(a)
	n := len(a)
	if n%2 == 1 {
		return a[n/2], true
	}
	return (a[n/2-1] + a[n/2]) / 2, true
}
