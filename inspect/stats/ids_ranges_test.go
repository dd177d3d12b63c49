package stats

import (
	"math"
	"slices"
	"testing"
)

// TestIDRanges: past a bar per id, an integer histogram groups whole ids
// into contiguous ranges, expected values derived by hand below.
func TestIDRanges(t *testing.T) {
	// 100 ids 0..99 once each, no bound, 64 bars: ceil(100/64) = 2 ids a
	// range, so 50 ranges [2k, 2k+1] of count 2.
	var v []float32
	for id := range 100 {
		v = append(v, float32(id))
	}
	var want []IDRange
	for k := range 50 {
		want = append(want, IDRange{Lo: int64(2 * k), Hi: int64(2*k + 1), Count: 2})
	}
	if got := IDsOf(v, 0).Ranges(64); !slices.Equal(got, want) {
		t.Errorf("ids 0..99 in 64 bars:\n got %v\nwant %v", got, want)
	}

	// E = 256 experts, expert i chosen i%3+1 times, and four bad ids: -5
	// once, -1 twice, 256 and 1000 once each. 64 bars: 8 a side outside
	// [0, 256), 48 for [0, 256): ceil(256/48) = 6 ids a range, 42 ranges
	// [6k, 6k+5] of 1+2+3+1+2+3 = 12 and [252, 255] of 1+2+3+1 = 7. Below
	// 0: [-5, -1] in 8 ranges is one id each, shown where held: -5 (1), -1
	// (2). From 256: [256, 1000] is 745 ids, ceil(745/8) = 94 a range:
	// 256 in [256, 349], 1000 in the 8th, [256+7·94, 1000] = [914, 1000].
	v = v[:0]
	for id := range 256 {
		for range id%3 + 1 {
			v = append(v, float32(id))
		}
	}
	v = append(v, -5, -1, -1, 256, 1000)
	want = []IDRange{{-5, -5, 1, true}, {-1, -1, 2, true}}
	for k := range 42 {
		want = append(want, IDRange{Lo: int64(6 * k), Hi: int64(6*k + 5), Count: 12})
	}
	want = append(want, IDRange{252, 255, 7, false}, IDRange{256, 349, 1, true}, IDRange{914, 1000, 1, true})
	ids := IDsOf(v, 256)
	if got := ids.Ranges(64); !slices.Equal(got, want) {
		t.Errorf("256 experts and 4 bad ids in 64 bars:\n got %v\nwant %v", got, want)
	}

	// Ids across all of int64 (a corrupt tensor), no bound: 2^64 ids in
	// 64 ranges of 2^58, first from MinInt64, last to MaxInt64, no
	// overflow.
	wide := IDs{Count: 2, Min: math.MinInt64, Max: math.MaxInt64, Distinct: 2, Counts: []IDCount{{math.MinInt64, 1}, {math.MaxInt64, 1}}}
	got := wide.Ranges(64)
	if len(got) != 64 {
		t.Fatalf("ids across int64: %d ranges, want 64: %v", len(got), got)
	}
	if got[0] != (IDRange{math.MinInt64, math.MinInt64 + 1<<58 - 1, 1, false}) || got[63] != (IDRange{math.MaxInt64 - 1<<58 + 1, math.MaxInt64, 1, false}) {
		t.Errorf("ids across int64: first %v, last %v", got[0], got[63])
	}
	for i := 1; i < len(got); i++ {
		if got[i].Lo != got[i-1].Hi+1 || got[i].Lo > got[i].Hi {
			t.Fatalf("ids across int64: range %d %v does not follow %v", i, got[i], got[i-1])
		}
	}
	if (IDs{}).Ranges(64) != nil {
		t.Error("no ids: want no ranges")
	}
}

// TestIDRangesOneBarAllInt64: Ranges(1) over ids from MinInt64 to
// MaxInt64 (a corrupt tensor, no bound) is one range [MinInt64,
// MaxInt64] holding both elements. Its width, 2^64 ids, wrapped to 0 in
// uint64 and the division by it panicked.
func TestIDRangesOneBarAllInt64(t *testing.T) {
	wide := IDs{Count: 3, Min: math.MinInt64, Max: math.MaxInt64, Distinct: 3,
		Counts: []IDCount{{math.MinInt64, 1}, {0, 1}, {math.MaxInt64, 1}}}
	want := []IDRange{{math.MinInt64, math.MaxInt64, 3, false}}
	if got := wide.Ranges(1); !slices.Equal(got, want) {
		t.Errorf("ids across int64 in 1 bar: got %v, want %v", got, want)
	}
	// Two bars: 2^63 ids each, split at 0.
	want = []IDRange{{math.MinInt64, -1, 1, false}, {0, math.MaxInt64, 2, false}}
	if got := wide.Ranges(2); !slices.Equal(got, want) {
		t.Errorf("ids across int64 in 2 bars: got %v, want %v", got, want)
	}
}

// TestIDRangesExtremes: for ids at the ends of int64, with and without a
// bound, and any number of bars from 1, Ranges never panics and keeps
// what its doc promises: at most max(bars, 1) ranges (3 with a bound),
// ascending and disjoint, Lo <= Hi, none straddling 0 or the bound, the
// ones outside [0, Bound) marked, and every element counted once.
func TestIDRangesExtremes(t *testing.T) {
	sets := [][]IDCount{
		{{math.MinInt64, 1}, {math.MaxInt64, 1}},
		{{math.MinInt64, 2}, {-1, 1}, {0, 3}, {1, 1}, {255, 1}, {256, 1}, {math.MaxInt64, 4}},
		{{math.MaxInt64 - 1, 1}, {math.MaxInt64, 1}},
		{{math.MinInt64, 1}, {math.MinInt64 + 1, 1}},
		{{-3, 1}},
		{{7, 5}},
	}
	for _, counts := range sets {
		for _, bound := range []int{0, 1, 256} {
			s := IDs{Bound: bound, Min: counts[0].ID, Max: counts[len(counts)-1].ID, Distinct: len(counts), Counts: counts}
			var total int64
			for _, c := range counts {
				total += c.Count
			}
			for _, bars := range []int{-1, 0, 1, 2, 3, 4, 7, 8, 9, 16, 64} {
				got := s.Ranges(bars)
				most := max(bars, 1)
				if bound > 0 {
					most = max(most, 3)
				}
				var sum int64
				for i, r := range got {
					sum += r.Count
					out := r.Hi < 0 || r.Lo >= int64(bound)
					switch {
					case r.Lo > r.Hi:
						t.Errorf("bound %d, %d bars, ids %v: range %v has Lo > Hi", bound, bars, counts, r)
					case i > 0 && !(r.Lo > got[i-1].Hi):
						t.Errorf("bound %d, %d bars, ids %v: range %v does not follow %v", bound, bars, counts, r, got[i-1])
					case bound > 0 && ((r.Lo < 0 && r.Hi >= 0) || (r.Lo < int64(bound) && r.Hi >= int64(bound))):
						t.Errorf("bound %d, %d bars, ids %v: range %v straddles 0 or the bound", bound, bars, counts, r)
					case bound > 0 && r.Outside != out:
						t.Errorf("bound %d, %d bars, ids %v: range %v Outside %v, want %v", bound, bars, counts, r, r.Outside, out)
					}
				}
				if len(got) > most || sum != total {
					t.Errorf("bound %d, %d bars, ids %v: %d ranges (at most %d) counting %d of %d elements: %v", bound, bars, counts, len(got), most, sum, total, got)
				}
			}
		}
	}
}

// TestIDsExtremes: ids at the ends of int64. An I64 tensor's MaxInt64
// reaches IDsOf as float32 2^63, which int64() does not hold (Go leaves
// the conversion undefined; amd64 gives MinInt64, so hist showed "min
// -9223372036854775808" for a tensor of MaxInt64 and 0): it is MaxInt64.
// Ranges(1) of ids across all of int64 is one range [MinInt64, MaxInt64]
// of every element (2^64 ids: the per-range width wrapped to 0 and
// divided by it).
func TestIDsExtremes(t *testing.T) {
	s := IDsOf([]float32{float32(math.MaxInt64), 0, float32(math.MinInt64)}, 0)
	want := []IDCount{{math.MinInt64, 1}, {0, 1}, {math.MaxInt64, 1}}
	if s.Min != math.MinInt64 || s.Max != math.MaxInt64 || !slices.Equal(s.Counts, want) {
		t.Errorf("ids MaxInt64, 0, MinInt64: min %d max %d counts %v; want %d, %d, %v", s.Min, s.Max, s.Counts, int64(math.MinInt64), int64(math.MaxInt64), want)
	}
	if b := IDsOf([]float32{float32(math.MaxInt64)}, 8); b.OutOfRange != 1 || b.Max != math.MaxInt64 {
		t.Errorf("MaxInt64 with 8 experts: out of range %d, max %d; want 1, MaxInt64", b.OutOfRange, b.Max)
	}
	s = IDs{Count: 3, Min: math.MinInt64, Max: math.MaxInt64, Distinct: 3, Counts: want}
	got := s.Ranges(1)
	if len(got) != 1 || got[0] != (IDRange{math.MinInt64, math.MaxInt64, 3, false}) {
		t.Errorf("ids across int64 in 1 bar: %v, want one range [MinInt64, MaxInt64] of 3", got)
	}
	if got := s.Ranges(2); len(got) != 2 || got[0] != (IDRange{math.MinInt64, -1, 1, false}) || got[1] != (IDRange{0, math.MaxInt64, 2, false}) {
		t.Errorf("ids across int64 in 2 bars: %v, want [MinInt64, -1] of 1 and [0, MaxInt64] of 2", got)
	}
}
