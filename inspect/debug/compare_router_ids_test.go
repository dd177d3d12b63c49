package debug

import (
	"math"
	"path/filepath"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/check"
	"hsdb/inspect/client"
)

// TestCompareRouterIDs: `capture site layers.1.mlp.gate topk_ids` (as the
// README and `help capture` suggest for a MoE model) wrote a dump that
// `compare` at the gate refused: "topk_ids is i64, not a float dtype".
// Ids are compared exactly: a row departs where any id differs, whatever
// the dump's dtype (bf16's tolerance, 2⁻⁷ of the largest id, would pass
// neighbouring experts at DeepSeek-V3's 256). Derived by hand from the
// definition: against the same run every row is equal (max |Δ| 0, no
// departure); with the router's correction bias dropped (`inject
// router-no-bias`), each sequence departs at the first token whose ids
// differ from the dump's, with max |Δ| the largest id difference.
func TestCompareRouterIDs(t *testing.T) {
	seqs := [][]int32{{20, 8, 87, 53, 95, 56, 7}, {0, 12, 7}}
	s := deepseekSession(t, 2, seqs)
	l := NewLocal(s)
	const site = "model.layers.1.mlp.gate"
	if err := l.CaptureSite(site, "topk_ids"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break(site, "", false); err != nil {
		t.Fatal(err)
	}
	ids := func() [][]float64 {
		t.Helper()
		v, err := s.Values("topk_ids", client.Index{}, client.Slice{Rank: 0, Seq: -1})
		if err != nil {
			t.Fatal(err)
		}
		return v.Ranks[0].Values
	}
	stopped(t)(s.Run())
	ref := ids()
	done(t)(s.Continue())
	dir := filepath.Join(t.TempDir(), "ref")
	if _, err := l.Dump(dir, client.DumpRequest{DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	check := func(name string, got [][]float64) {
		t.Helper()
		rep, err := s.Compare(dir)
		if err != nil {
			t.Fatalf("%s: compare: %v", name, err)
		}
		if len(rep.Rows) != len(seqs) {
			t.Fatalf("%s: rows %+v, want one per sequence", name, rep.Rows)
		}
		r0 := 0
		for sq, r := range rep.Rows {
			first, maxd := -1, 0.0
			for i := range len(seqs[sq]) {
				for c := range ref[r0+i] {
					if d := math.Abs(got[r0+i][c] - ref[r0+i][c]); d > 0 {
						maxd = math.Max(maxd, d)
						if first < 0 {
							first = i
						}
					}
				}
			}
			r0 += len(seqs[sq])
			if r.Seq != sq || !r.Exact || r.FirstToken != first || r.MaxAbs != maxd || r.IDsDiffer != 0 {
				t.Errorf("%s: seq %d: %+v, want exact, first departure %d, max |Δ| %g", name, sq, r, first, maxd)
			}
		}
	}
	stopped(t)(s.Run())
	check("same run", ids())
	if err := l.Inject(client.Fault{Kind: model.FaultRouterNoBias, Rank: -1, Site: "model.layers.1"}); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	got := ids()
	differ := false
	for i := range got {
		for c := range got[i] {
			differ = differ || got[i][c] != ref[i][c]
		}
	}
	if !differ {
		t.Fatal("router-no-bias left every id as it was: the test compares nothing")
	}
	check("router-no-bias", got)
}

// TestCompareIDsExactInBF16: a bf16 dump's tolerance (cos 0.999, max |Δ|
// 2⁻⁷ of the row's largest value) passes a top-k row [383, 5] against
// the dump's [382, 5] (|Δ| 1 ≤ 383/128, cos 0.999997); ids compare
// exactly, so the row departs at its token. Values by hand.
func TestCompareIDsExactInBF16(t *testing.T) {
	b := &model.Batch{IDs: []int32{7}, Pos: []int32{0}}
	ps := patchSeq{ids: []int32{7}, rows: tensor.FromF32([]float32{382, 5}, 1, 2), integer: true}
	tol := check.ToleranceFor(tensor.BF16)
	loose := compareSeq(client.CompareRow{}, []float32{383, 5}, 2, ps, b, 0, 1, tol)
	if loose.FirstToken != -1 {
		t.Fatalf("premise: bf16's tolerance departs at %d, want none", loose.FirstToken)
	}
	r := compareSeq(client.CompareRow{}, []float32{383, 5}, 2, ps, b, 0, 1, rowTolerance(tol, true))
	if r.FirstToken != 0 || r.MaxAbs != 1 {
		t.Errorf("ids: %+v, want departure at token 0, max |Δ| 1", r)
	}
	same := compareSeq(client.CompareRow{}, []float32{382, 5}, 2, ps, b, 0, 1, rowTolerance(tol, true))
	if same.FirstToken != -1 || same.MaxAbs != 0 {
		t.Errorf("equal ids: %+v, want no departure", same)
	}
}
