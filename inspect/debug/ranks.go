package debug

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

// Ranks compares tensor name between every pair of ranks over the rows sl
// selects (sl.Rank is ignored).
func (s *Session) Ranks(name string, sl client.Slice) (*client.RanksReport, error) {
	sl.Rank = -1
	var rep *client.RanksReport
	err := s.at(func(st *stopCtx) error {
		l, err := s.locate(st, name, sl)
		if err != nil {
			return err
		}
		rep = &client.RanksReport{Site: st.ev.Site.Path, Tensor: name, Step: st.ev.Step, Pairs: []client.RankPair{}}
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
				p := client.RankPair{A: a, B: b, Expected: "equal"}
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
