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
// Counts.
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
		id := int64(f)
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
