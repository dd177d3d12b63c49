package capture

import (
	"fmt"
	"math"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/stats"
)

// Gathered is one site tensor assembled on the host from every rank's view:
// the full tensor as float32 [tokens, width] (Host tensors keep their
// dtype), how it was assembled, and the largest disagreement found between
// ranks where they must agree.
type Gathered struct {
	T *tensor.Tensor
	// How: "replicated (4 ranks agree)", "gathered from 4 column shards",
	// "summed over 4 partial ranks", "host".
	How string
	// MaxRankDiff is the largest relative difference found between the
	// ranks' copies of a replicated tensor, of their moments (sum, sum of
	// squares, min, max) relative to the largest magnitude; 0 when they
	// agree exactly, for one rank, and for shards (whose overlaps Gather
	// requires equal).
	MaxRankDiff float64
	// WorstRank is the rank with MaxRankDiff (0 when none).
	WorstRank int
	// Differing are the ranks whose copy differs from rank 0's beyond
	// ReplicaTol, ascending; Alone is the one rank whose copy differs
	// while every other rank's agree (nil when there is none, or at
	// fewer than 3 ranks, where it cannot be told): see replicas.go.
	Differing []int
	Alone     *int
}

// gatherSite assembles tensor name of a site from every rank's view, as
// vLLM's layouts define the full tensor: Replicated takes rank 0's copy and
// checks every other rank's moments against it (computed where the data
// lives, so only a few numbers cross to the host); Sharded and Partial are
// copied to the host and rebuilt by Gather (all-gather along the last
// dimension, resp. the sum of an all-reduce). Errors: the tensor is missing
// on a rank (naming the rank and what the site shows); Gather's
// ErrShardMismatch or ErrShape (shards that leave columns uncovered or
// disagree where they overlap).
func GatherSite(site string, name string, ranks []*model.RankView) (*Gathered, error) {
	return gatherSite(site, name, ranks, false)
}

// gatherSite is GatherSite; with raw, a replicated tensor on a device
// that has ToHostRaw comes back in its own dtype (bf16 activations stay
// bf16: what a capture writes), not as float32.
func gatherSite(site string, name string, ranks []*model.RankView, raw bool) (*Gathered, error) {
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
	if k := sts[0].Shard.Kind; k == model.Sharded || k == model.Partial {
		parts := make([]stats.Part, len(ranks))
		for i, v := range ranks {
			s := sts[i].T.Shape()
			parts[i] = stats.Part{Rank: v.Rank, Shard: sts[i].Shard, Data: v.Device.ToHost(sts[i].T, 0, s[0], 0, tensor.Numel(s[1:]))}
		}
		full, err := stats.Gather(parts)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", site, name, err)
		}
		how := fmt.Sprintf("gathered from %d column shards", len(ranks))
		if k == model.Partial {
			how = fmt.Sprintf("summed over %d partial ranks", len(ranks))
		}
		return &Gathered{T: full, How: how}, nil
	}
	cols := tensor.Numel(shape[1:])
	var out *tensor.Tensor
	if rh, ok := ranks[0].Device.(model.RawHoster); ok && raw {
		out = rh.ToHostRaw(sts[0].T, 0, rows).Reshape(rows, cols)
	} else {
		out = ranks[0].Device.ToHost(sts[0].T, 0, rows, 0, cols)
	}
	g := &Gathered{T: out, How: "replicated"}
	if len(ranks) == 1 {
		return g, nil
	}
	// Rank 0's moments are reduced as every other rank's are (on its
	// device, in the same order), so that equal copies give equal moments:
	// float64 sums of the host copy taken whole differ from row-by-row
	// ones in their last bits.
	g.compareReplicas(ranks[0].Device.Moments(sts[0].T, 0, rows, 0, cols), ranks, sts, rows, cols)
	g.How = fmt.Sprintf("replicated (%d ranks)", len(ranks))
	return g, nil
}

// momentsDiff compares two ranks' moments of what must be the same tensor:
// the largest of |Δsum|/(n·absmax), |Δ√sumsq|/√(n)·absmax, |Δmin| and
// |Δmax| relative to absmax, and any difference in NaN/Inf counts (1); a
// difference that cannot be computed (NaN) is 1 too: comparisons fail
// closed.
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
	if !(d >= 0) { // NaN (sums that overflowed to Inf on both ranks): not shown equal
		return 1
	}
	return d
}
