package debug

import (
	"math"
	"path/filepath"
	"testing"

	"hsdb/inspect/client"
)

// TestCompareDivergedRank: `set var stream[2, :] = 0 --rank 1` at a stop
// makes rank 1's copy of the replicated stream differ from rank 0's in
// row 2 (sequence 0's token 2). compare against a dump of the same
// inputs used rank 0's copy alone and reported no departure, hiding the
// rank that diverged. Derived by hand: sequence 0 gets a row per rank —
// rank 0 equal to the dump (first departure none, max |Δ| 0), rank 1
// departing first at token 2 with max |Δ| = the dump's largest |value| in
// that row (every value there was replaced by 0) — and sequence 1, whose
// rows agree on every rank, one row for all ranks (rank -1), equal.
func TestCompareDivergedRank(t *testing.T) {
	s := newSessionOn(t, "cpu", 2)
	l := NewLocal(s)
	if err := l.CaptureLayers([]int{2}, "stream"); err != nil {
		t.Fatal(err)
	}
	done(t)(s.Run())
	dir := filepath.Join(t.TempDir(), "ref")
	if _, err := l.Dump(dir, client.DumpRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("layers.2", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	// The dump's row 2 of sequence 0, read before the edit: every rank's
	// copy is equal here.
	before, err := s.Compare(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Rows) != 2 {
		t.Fatalf("before the edit: rows %+v, want one per sequence", before.Rows)
	}
	for _, r := range before.Rows {
		if r.Rank != -1 || r.FirstToken != -1 || r.MaxAbs != 0 {
			t.Fatalf("before the edit: %+v, want one equal row for all ranks", r)
		}
	}
	vals, err := s.Values("stream", client.Index{Rows: client.IndexSpec{Lo: 2, Single: true, HasLo: true}}, client.Slice{Rank: 0, Seq: -1})
	if err != nil {
		t.Fatal(err)
	}
	var rowMax float64
	for _, v := range vals.Ranks[0].Values[0] {
		rowMax = math.Max(rowMax, math.Abs(v))
	}
	if _, err := s.SetVar(client.EditRequest{Tensor: "stream", HasIndex: true, Index: client.Index{Rows: client.IndexSpec{Lo: 2, Single: true, HasLo: true}}, Slice: client.Slice{Rank: 1, Seq: -1}, Op: "=", Value: 0}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Compare(dir)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ seq, rank int }
	got := map[key]client.CompareRow{}
	for _, r := range rep.Rows {
		got[key{r.Seq, r.Rank}] = r
	}
	if len(rep.Rows) != 3 {
		t.Fatalf("rows %+v, want seq 0 rank 0, seq 0 rank 1, seq 1 all ranks", rep.Rows)
	}
	if r, ok := got[key{0, 0}]; !ok || r.FirstToken != -1 || r.MaxAbs != 0 {
		t.Errorf("seq 0 rank 0: %+v (present %v), want equal", r, ok)
	}
	if r, ok := got[key{0, 1}]; !ok || r.FirstToken != 2 || !(math.Abs(r.MaxAbs-rowMax) <= 1e-6*rowMax) || !(rowMax > 0) {
		t.Errorf("seq 0 rank 1: %+v (present %v), want first departure at token 2, max |Δ| %g", r, ok, rowMax)
	}
	if r, ok := got[key{1, -1}]; !ok || r.FirstToken != -1 || r.MaxAbs != 0 {
		t.Errorf("seq 1: %+v (present %v), want one equal row for all ranks", r, ok)
	}
}
