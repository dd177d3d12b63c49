package debug

import (
	"slices"
	"testing"
)

// TestBreakIndexBySite: breakpoints are indexed by site pattern ("layers.2"
// and "model.layers.2" alike), so adding the N-th one at a site reads its
// index entry (the first 8 ids and the count), not the N-1 before it. The
// 1000th break there reports breakpoints 1-8 and 999 in all; after delete
// 1 2 3 the next reports 4-11 and 997 (ids 4..1000 left); a watch and
// another site's breakpoints are counted apart.
func TestBreakIndexBySite(t *testing.T) {
	s := newSession(t, 1)
	const n = 1000
	for i := 1; i <= n; i++ {
		p := "layers.2"
		if i%2 == 0 {
			p = "model.layers.2"
		}
		b, err := s.Break(p, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if b.AlsoCount != i-1 || len(b.AlsoAt) != min(i-1, 8) {
			t.Fatalf("break %d: also %v of %d, want %d in all", i, b.AlsoAt, b.AlsoCount, i-1)
		}
	}
	sb := s.atSite["layers.2"]
	if sb == nil || sb.n != n || !slices.Equal(sb.first, []int{1, 2, 3, 4, 5, 6, 7, 8}) || len(s.atSite) != 1 {
		t.Fatalf("index %+v (%d keys): want the first 8 ids and %d", sb, len(s.atSite), n)
	}
	if _, err := s.Watch("stream", "absmax > 1e9"); err != nil {
		t.Fatal(err)
	}
	other, err := s.Break("layers.1", "", false)
	if err != nil || other.AlsoCount != 0 || other.AlsoAt != nil {
		t.Fatalf("break layers.1: %+v %v, want no breakpoint also there", other, err)
	}
	if err := s.Delete(1, 2, 3); err != nil {
		t.Fatal(err)
	}
	b, err := s.Break("layers.2", "", false)
	if err != nil || b.AlsoCount != n-3 || !slices.Equal(b.AlsoAt, []int{4, 5, 6, 7, 8, 9, 10, 11}) {
		t.Fatalf("after delete 1 2 3: also %v of %d (%v), want 4..11 of %d", b.AlsoAt, b.AlsoCount, err, n-3)
	}
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Break("layers.2", "", false); b.AlsoCount != 0 {
		t.Fatalf("after delete all: %d also there", b.AlsoCount)
	}
}
