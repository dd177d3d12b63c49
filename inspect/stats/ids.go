package stats

import (
	"math"
	"sort"
)

// IDCount is how many elements of an integer tensor hold ID.
type IDCount struct {
	ID    int64 `json:"id"`
	Count int64 `json:"count"`
}

// IDs are the statistics hsdb shows for an integer tensor (a MoE router's
// topk_ids [tokens, top_k] I64, a loss mask): mean, std and l2 mean
// nothing for ids, so it gives the smallest and largest id, how many
// distinct ids occur and how often each does (Counts, ascending by id).
// Bound is the number of valid ids when known (the expert count E, ids
// valid in [0, E)), 0 when not; OutOfRange counts the elements outside
// [0, Bound) (always 0 when Bound is 0). An empty tensor has Count 0 and
// Min, Max 0.
type IDs struct {
	Count      int64     `json:"count"`
	Min        int64     `json:"min"`
	Max        int64     `json:"max"`
	Distinct   int       `json:"distinct"`
	Counts     []IDCount `json:"counts"`
	Bound      int       `json:"bound,omitempty"`
	OutOfRange int64     `json:"out_of_range"`
}

// IDsOf counts the ids in v (integer values held as float32, as the host
// copies of hsdb's integer tensors are: exact below 2^24), bound as IDs
// says. A value that is not an integer (NaN, Inf, a fraction: not an id)
// counts as out of range only when bound > 0 and is otherwise left out of
// Counts. A value from 2^63 up is MaxInt64 (an I64 tensor's MaxInt64 is
// 2^63 as float32; Go's int64 conversion of it is undefined, -2^63 on
// amd64).
func IDsOf(v []float32, bound int) IDs {
	s := IDs{Count: int64(len(v)), Bound: max(bound, 0), Counts: []IDCount{}}
	seen := map[int64]int64{}
	first := true
	for _, x := range v {
		f := float64(x)
		if f != math.Trunc(f) || math.IsInf(f, 0) {
			if s.Bound > 0 {
				s.OutOfRange++
			}
			continue
		}
		id := int64(math.MaxInt64) // f >= 2^63: float32(MaxInt64) rounds up to 2^63, which int64(f) does not hold
		if f < 1<<63 {
			id = int64(f)
		}
		seen[id]++
		if first {
			s.Min, s.Max, first = id, id, false
		}
		s.Min, s.Max = min(s.Min, id), max(s.Max, id)
		if s.Bound > 0 && (id < 0 || id >= int64(s.Bound)) {
			s.OutOfRange++
		}
	}
	for id, n := range seen {
		s.Counts = append(s.Counts, IDCount{ID: id, Count: n})
	}
	sort.Slice(s.Counts, func(i, j int) bool { return s.Counts[i].ID < s.Counts[j].ID })
	s.Distinct = len(s.Counts)
	return s
}

// IDRange is one bar of an integer histogram: Count elements hold an id in
// [Lo, Hi] (both ends included, Lo <= Hi). Outside says the range lies
// outside [0, Bound) of the IDs it came from.
type IDRange struct {
	Lo      int64 `json:"lo"`
	Hi      int64 `json:"hi"`
	Count   int64 `json:"count"`
	Outside bool  `json:"outside,omitempty"`
}

// Ranges groups s.Counts into contiguous ranges of whole ids, at most bars
// of them (at least 1, or 3 with a Bound: one per side of [0, E)), for a
// histogram of an integer tensor with too many distinct ids for a bar
// each: edges are ids, never fractions. With
// no Bound it splits [Min, Max] into equal-width ranges (the last may be
// shorter), empty ones kept as a float histogram keeps its empty bins.
// With a Bound E (a router's expert count) no range straddles 0 or E: [0,
// E) is split whole, from id 0, empty ranges kept (experts no token
// chose), and the ids below 0 and those from E up get bars/8 ranges each
// (at least 1), shown only where they hold ids and marked Outside; [0, E)
// takes the rest. Ranges come in ascending order; nil for no ids.
func (s IDs) Ranges(bars int) []IDRange {
	if len(s.Counts) == 0 {
		return nil
	}
	bars = max(bars, 1)
	if s.Bound > 0 {
		bars = max(bars, 3)
	}
	type seg struct {
		lo, hi  int64
		n       int
		outside bool
	}
	var segs []seg
	if s.Bound > 0 {
		side := max(bars/8, 1)
		in := bars
		if s.Min < 0 {
			segs, in = append(segs, seg{s.Min, -1, side, true}), in-side
		}
		if s.Max >= int64(s.Bound) {
			in -= side
		}
		segs = append(segs, seg{0, int64(s.Bound) - 1, max(in, 1), false})
		if s.Max >= int64(s.Bound) {
			segs = append(segs, seg{int64(s.Bound), s.Max, side, true})
		}
	} else {
		segs = []seg{{s.Min, s.Max, bars, false}}
	}
	var out []IDRange
	for _, g := range segs {
		// Offsets from g.lo in uint64: hi-lo fits even for ids across all
		// of int64 (signed arithmetic wraps, as Go defines it). span is
		// the ids per range less one, ceil((last+1)/n) - 1 = last/n: the
		// width itself is 2^64, which wraps to 0, for all of int64 in one
		// range (n 1), where every offset is in range 0.
		last := uint64(g.hi - g.lo)
		span := last / uint64(g.n)
		rangeOf := func(off uint64) uint64 {
			if span == math.MaxUint64 {
				return 0
			}
			return off / (span + 1)
		}
		rs := make([]IDRange, rangeOf(last)+1)
		for k := range rs {
			off := uint64(k) * (span + 1)
			end := last
			if span < last-off {
				end = off + span
			}
			rs[k] = IDRange{Lo: g.lo + int64(off), Hi: g.lo + int64(end), Outside: g.outside}
		}
		for _, c := range s.Counts {
			if c.ID >= g.lo && c.ID <= g.hi {
				rs[rangeOf(uint64(c.ID-g.lo))].Count += c.Count
			}
		}
		for _, r := range rs {
			if r.Count > 0 || !g.outside {
				out = append(out, r)
			}
		}
	}
	return out
}
