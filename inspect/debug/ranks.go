package debug

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/inspect/stats"
)

// RankPair compares two ranks' copies of a tensor. Relation is "equal"
// (every element equal), "diverged" (copies that should be equal differ:
// First is the first differing [row, col] of the selection, A and B the
// values there, MaxAbs the largest |Δ|), "shard of" (the ranks hold
// different columns of one tensor: Detail names them) or "addends" (partial
// sums, different by design).
type RankPair struct {
	A        int     `json:"a"`
	B        int     `json:"b"`
	Relation string  `json:"relation"`
	Detail   string  `json:"detail,omitempty"`
	Differ   int64   `json:"differ,omitempty"`
	First    []int   `json:"first,omitempty"`
	ValA     float64 `json:"value_a,omitempty"`
	ValB     float64 `json:"value_b,omitempty"`
	MaxAbs   float64 `json:"max_abs_diff,omitempty"`
	Expected string  `json:"expected"`
}

// RanksReport is `ranks TENSOR`: the sharding label of each rank and every
// pair of ranks compared (empty, not nil, with one rank).
type RanksReport struct {
	Site   string     `json:"site"`
	Tensor string     `json:"tensor"`
	Step   int        `json:"step"`
	Shards []string   `json:"shards"`
	Pairs  []RankPair `json:"pairs"`
}

// Ranks compares tensor name between every pair of ranks over the rows sl
// selects (sl.Rank is ignored).
func (s *Session) Ranks(name string, sl Slice) (*RanksReport, error) {
	sl.Rank = -1
	var rep *RanksReport
	err := s.at(func(st *stopCtx) error {
		l, err := s.locate(st, name, sl)
		if err != nil {
			return err
		}
		rep = &RanksReport{Site: st.ev.Site.Path, Tensor: name, Step: st.ev.Step, Pairs: []RankPair{}}
		data := make([][]float32, len(l.parts))
		get := func(r int) []float32 {
			if data[r] == nil {
				data[r] = l.host(r).F32()
			}
			return data[r]
		}
		for _, t := range l.parts {
			rep.Shards = append(rep.Shards, t.Shard.String())
		}
		for a := range l.parts {
			for b := a + 1; b < len(l.parts); b++ {
				pa, pb := l.parts[a].Shard, l.parts[b].Shard
				p := RankPair{A: a, B: b, Expected: "equal"}
				switch {
				case pa.Kind == model.Partial && pb.Kind == model.Partial:
					p.Relation, p.Expected, p.Detail = "addends", "addends", "partial sums: the full tensor is their sum"
					rep.Pairs = append(rep.Pairs, p)
					continue
				case pa.Kind == model.Sharded && pb.Kind == model.Sharded && (pa.Start != pb.Start || pa.End != pb.End):
					p.Relation, p.Expected = "shard of", "shard of"
					p.Detail = fmt.Sprintf("rank %d holds columns %d:%d, rank %d columns %d:%d of %d", a, pa.Start, pa.End, b, pb.Start, pb.End, pa.Full)
					rep.Pairs = append(rep.Pairs, p)
					continue
				case pa.Kind != pb.Kind:
					p.Expected = "?"
					p.Detail = fmt.Sprintf("labels disagree: %s vs %s", pa, pb)
				}
				d, err := stats.Compare(get(a), get(b))
				if err != nil {
					p.Relation, p.Detail = "diverged", fmt.Sprintf("shapes differ: %v", err)
					rep.Pairs = append(rep.Pairs, p)
					continue
				}
				if d.Equal {
					p.Relation = "equal"
				} else {
					c := cols(l.parts[a])
					p.Relation, p.Differ, p.MaxAbs = "diverged", d.Differ, d.MaxAbs
					p.First = []int{l.rows.Lo + d.First/c, d.First % c}
					p.ValA, p.ValB = d.FirstA, d.FirstB
				}
				rep.Pairs = append(rep.Pairs, p)
			}
		}
		return nil
	})
	return rep, err
}
