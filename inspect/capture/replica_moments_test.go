package capture

import (
	"testing"

	"hsdb/engine/backend/cpu"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// TestReplicaMomentsSameOrder: two ranks holding the same bytes of a
// replicated tensor were reported to differ (check: "2 ranks agree (max
// relative difference 2.04e-16)" on every file of a --tp 2 dump, whose
// `ranks` said equal): rank 0's moments were summed over the whole host
// copy at once and the others' row by row, and float64 sums in another
// order differ in their last bits. Rows chosen so that the orders differ
// by hand: summed whole, 1e17 + 1 + 1 - 1e17 + 1 + 1 = 2 (each 1 added to
// 1e17 is lost, then the last two count); row by row, 1e17 and -1e17
// (the ones lost against each) merge to 0. Equal copies must differ by
// exactly 0.
func TestReplicaMomentsSameOrder(t *testing.T) {
	x := tensor.FromF32([]float32{1e17, 1, 1, -1e17, 1, 1}, 2, 3)
	var ranks []*model.RankView
	for r := range 2 {
		d := cpu.New(r)
		ranks = append(ranks, &model.RankView{Rank: r, World: 2, Device: d,
			Tensors: []model.SiteTensor{{Name: "stream", T: d.Upload(x), Shard: model.Sharding{Kind: model.Replicated}}}})
	}
	whole, rows := tensor.MomentsF32(x.F32()), ranks[1].Device.Moments(ranks[1].Tensors[0].T, 0, 2, 0, 3)
	if whole.Sum == rows.Sum {
		t.Fatalf("the two summation orders agree (%v): the case does not exercise the fault", whole.Sum)
	}
	for _, raw := range []bool{false, true} {
		g, err := gatherSite("model.layers.0", "stream", ranks, raw)
		if err != nil {
			t.Fatal(err)
		}
		if g.MaxRankDiff != 0 {
			t.Errorf("raw=%v: equal copies differ by %g (rank %d)", raw, g.MaxRankDiff, g.WorstRank)
		}
	}
}
