package inspect

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// ErrRankMismatch marks ranks that disagree on a tensor they must hold
// identically: a replicated tensor whose statistics differ between ranks,
// or overlapping shards (replicated kv heads) with different values.
var ErrRankMismatch = errors.New("ranks disagree")

// Gathered is one site tensor assembled on the host from every rank's view:
// the full tensor as float32 [tokens, width] (Host tensors keep their
// dtype), how it was assembled, and the largest disagreement found between
// ranks where they must agree.
type Gathered struct {
	T *tensor.Tensor
	// How: "replicated (4 ranks agree)", "gathered from 4 column shards",
	// "summed over 4 partial ranks", "host".
	How string
	// MaxRankDiff is the largest relative difference found between ranks
	// that must agree: for replicated tensors, of their moments (sum, sum
	// of squares, min, max) relative to the largest magnitude; for
	// overlapping shards, of the overlapping values. 0 when they agree
	// exactly or there is one rank.
	MaxRankDiff float64
	// WorstRank is the rank with MaxRankDiff (0 when none).
	WorstRank int
}

// gatherSite assembles tensor name of a site from every rank's view, as
// vLLM's layouts define the full tensor: Replicated takes rank 0's copy and
// checks every other rank's moments against it (computed where the data
// lives, so only a few numbers cross to the host); Sharded places each
// rank's columns [Start, End) into a [tokens, Full] tensor (an all-gather
// along the last dimension), checking that the ranks cover every column and
// agree where ranges overlap; Partial sums the ranks (an all-reduce).
// Errors: the tensor is missing on a rank (naming the rank and what the
// site shows), shards that leave columns uncovered.
func gatherSite(site string, name string, ranks []*model.RankView) (*Gathered, error) {
	sts := make([]model.SiteTensor, len(ranks))
	for i, v := range ranks {
		st, ok := v.Tensor(name)
		if !ok {
			var have []string
			for _, t := range v.Tensors {
				have = append(have, t.Name)
			}
			return nil, fmt.Errorf("%s: rank %d shows no tensor %q (it shows %s)", site, v.Rank, name, strings.Join(have, ", "))
		}
		sts[i] = st
	}
	if sts[0].T == nil {
		h := sts[0].Host
		c := tensor.New(h.DType, h.Shape...)
		copy(c.Data, h.Data)
		return &Gathered{T: c, How: "host"}, nil
	}
	shape := sts[0].T.Shape()
	rows := shape[0]
	switch sts[0].Shard.Kind {
	case model.Sharded:
		full := sts[0].Shard.Full
		out := tensor.New(tensor.F32, rows, full)
		o := out.F32()
		covered := make([]int8, full)
		g := &Gathered{T: out, How: fmt.Sprintf("gathered from %d column shards", len(ranks))}
		for i, v := range ranks {
			sh := sts[i].Shard
			w := sh.End - sh.Start
			if sh.Kind != model.Sharded || sh.Full != full || sh.Start < 0 || sh.End > full || w <= 0 {
				return nil, fmt.Errorf("%s %s: rank %d is labelled %s, rank 0 %s", site, name, v.Rank, sh, sts[0].Shard)
			}
			h := v.Device.ToHost(sts[i].T, 0, rows, 0, w).F32()
			for r := range rows {
				for c := range w {
					col := sh.Start + c
					x := h[r*w+c]
					if covered[col] != 0 {
						if d := relDiff(float64(o[r*full+col]), float64(x)); d > g.MaxRankDiff {
							g.MaxRankDiff, g.WorstRank = d, v.Rank
						}
						continue
					}
					o[r*full+col] = x
				}
			}
			for c := sh.Start; c < sh.End; c++ {
				covered[c] = 1
			}
		}
		for c, ok := range covered {
			if ok == 0 {
				return nil, fmt.Errorf("%s %s: no rank holds column %d of %d", site, name, c, full)
			}
		}
		return g, nil
	case model.Partial:
		cols := tensor.Numel(shape[1:])
		out := tensor.New(tensor.F32, rows, cols)
		o := out.F32()
		for i, v := range ranks {
			for j, x := range v.Device.ToHost(sts[i].T, 0, rows, 0, cols).F32() {
				o[j] += x
			}
		}
		return &Gathered{T: out, How: fmt.Sprintf("summed over %d partial ranks", len(ranks))}, nil
	}
	cols := tensor.Numel(shape[1:])
	out := ranks[0].Device.ToHost(sts[0].T, 0, rows, 0, cols)
	g := &Gathered{T: out, How: "replicated"}
	if len(ranks) == 1 {
		return g, nil
	}
	ref := tensor.MomentsF32(out.F32())
	for i, v := range ranks[1:] {
		m := v.Device.Moments(sts[i+1].T, 0, rows, 0, cols)
		if d := momentsDiff(ref, m); d > g.MaxRankDiff {
			g.MaxRankDiff, g.WorstRank = d, v.Rank
		}
	}
	g.How = fmt.Sprintf("replicated (%d ranks)", len(ranks))
	return g, nil
}

// momentsDiff compares two ranks' moments of what must be the same tensor:
// the largest of |Δsum|/(n·absmax), |Δ√sumsq|/√(n)·absmax, |Δmin| and
// |Δmax| relative to absmax, and any difference in NaN/Inf counts (1).
func momentsDiff(a, b tensor.Moments) float64 {
	if a.Count != b.Count || a.NaN != b.NaN || a.Inf != b.Inf {
		return 1
	}
	scale := math.Max(a.AbsMax, b.AbsMax)
	if scale == 0 {
		if b.AbsMax != 0 {
			return 1
		}
		return 0
	}
	n := float64(max(a.Finite(), 1))
	d := math.Abs(a.Sum-b.Sum) / (n * scale)
	d = math.Max(d, math.Abs(math.Sqrt(a.SumSq)-math.Sqrt(b.SumSq))/(math.Sqrt(n)*scale))
	d = math.Max(d, math.Abs(a.Min-b.Min)/scale)
	d = math.Max(d, math.Abs(a.Max-b.Max)/scale)
	return d
}

func relDiff(a, b float64) float64 {
	if a == b || (a != a && b != b) {
		return 0
	}
	s := math.Max(math.Abs(a), math.Abs(b))
	if s == 0 || math.IsInf(s, 0) || s != s {
		return 1
	}
	return math.Abs(a-b) / s
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
