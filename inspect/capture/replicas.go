package capture

import (
	"fmt"
	"slices"
	"strconv"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// compareReplicas sets MaxRankDiff, WorstRank, Differing and Alone from
// the moments of every rank's copy of a replicated [rows, cols] tensor
// (sts[i] on ranks[i], reduced where it lives) against ref, rank 0's.
func (g *Gathered) compareReplicas(ref tensor.Moments, ranks []*model.RankView, sts []model.SiteTensor, rows, cols int) {
	ms := []tensor.Moments{ref}
	for i, v := range ranks[1:] {
		m := v.Device.Moments(sts[i+1].T, 0, rows, 0, cols)
		ms = append(ms, m)
		if d := momentsDiff(ref, m); d > g.MaxRankDiff {
			g.MaxRankDiff, g.WorstRank = d, v.Rank
		}
	}
	ids := make([]int, len(ranks))
	for i, v := range ranks {
		ids[i] = v.Rank
	}
	g.Differing, g.Alone = replicaOutliers(ms, ids)
}

// replicaOutliers says which copies of a replicated tensor disagree, from
// each rank's moments (ms[i] is rank ids[i]'s; ms[0] the reference, rank
// 0's): differing, the ranks whose copy differs from the reference's
// beyond ReplicaTol; alone, the one rank whose copy differs from the
// others' while all the others agree with each other (a rank that
// diverged on its own, rank 0 included), or nil. With two ranks there is
// no majority, so alone is nil: which copy is off cannot be told.
func replicaOutliers(ms []tensor.Moments, ids []int) (differing []int, alone *int) {
	same := func(a, b int) bool { return momentsDiff(ms[a], ms[b]) <= ReplicaTol }
	for i := 1; i < len(ms); i++ {
		if !same(0, i) {
			differing = append(differing, ids[i])
		}
	}
	if len(differing) == 0 || len(ms) < 3 {
		return differing, nil
	}
	for r := range ms {
		first := 0
		if r == 0 {
			first = 1
		}
		ok := !same(first, r)
		for j := range ms {
			if ok && j != r && !same(first, j) {
				ok = false
			}
		}
		if ok {
			a := ids[r]
			return differing, &a
		}
	}
	return differing, nil
}

// merge folds another pass's cross-rank check of the same key into r: the
// worst relative difference and its rank, the union of the differing
// ranks, and the lone rank while every pass that differed names the same
// one (nil otherwise); OK while the worst is within ReplicaTol.
func (r *ReplicaRecord) merge(o ReplicaRecord) {
	if o.MaxRelDiff > r.MaxRelDiff {
		r.MaxRelDiff, r.WorstRank = o.MaxRelDiff, o.WorstRank
	}
	switch {
	case len(o.Differing) == 0:
	case len(r.Differing) == 0:
		r.Alone = o.Alone
	case r.Alone == nil || o.Alone == nil || *r.Alone != *o.Alone:
		r.Alone = nil
	}
	u := slices.Concat(r.Differing, o.Differing)
	slices.Sort(u)
	r.Differing = slices.Compact(u)
	if len(r.Differing) == 0 {
		r.Differing = nil
	}
	r.Ranks = o.Ranks
	r.OK = r.MaxRelDiff <= ReplicaTol
}

// Describe says, for a failed cross-rank check, which ranks' copies
// differ and by how much (relative to the tensor's largest magnitude, as
// MaxRelDiff): the lone rank when one rank diverged and the others agree
// (the rank to look at); that every copy differs when no one rank does
// (all ranks diverged together, as partial sums that missed their
// all-reduce do); at two ranks, that which one is off cannot be told. A
// record without Differing (a manifest written before it) names
// WorstRank as it did.
func (r ReplicaRecord) Describe() string {
	d := r.MaxRelDiff
	switch {
	case r.Alone != nil:
		return fmt.Sprintf("rank %d's copy differs from the other %d ranks', which agree (by %.3g)", *r.Alone, r.Ranks-1, d)
	case len(r.Differing) == 0:
		return fmt.Sprintf("rank %d differs from rank 0 by %.3g", r.WorstRank, d)
	case r.Ranks == 2:
		return fmt.Sprintf("ranks 0 and 1 differ by %.3g (two copies: which one is off cannot be told)", d)
	case len(r.Differing) == r.Ranks-1:
		return fmt.Sprintf("the copies differ on every rank, not on one alone (ranks %s differ from rank 0 by up to %.3g): the ranks diverged together, as partial sums that missed their all-reduce do", joinInts(r.Differing), d)
	default:
		return fmt.Sprintf("ranks %s differ from rank 0 by up to %.3g", joinInts(r.Differing), d)
	}
}

// keysInLayerOrder returns a capture's keys with the numbers in them
// compared as numbers (hidden_states.2 before hidden_states.10), so that
// the first key listed is the first layer.
func keysInLayerOrder(keys []string) []string {
	slices.SortFunc(keys, func(a, b string) int {
		for a != "" && b != "" {
			na, ra := leadingNumber(a)
			nb, rb := leadingNumber(b)
			if na >= 0 && nb >= 0 {
				if na != nb {
					return na - nb
				}
				a, b = ra, rb
				continue
			}
			if a[0] != b[0] {
				return int(a[0]) - int(b[0])
			}
			a, b = a[1:], b[1:]
		}
		return len(a) - len(b)
	})
	return keys
}

// leadingNumber splits the decimal digits at the start of s off as a
// number (-1 when s starts with none or they overflow) and the rest.
func leadingNumber(s string) (int, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if i == 0 || err != nil {
		return -1, s
	}
	return n, s[i:]
}
