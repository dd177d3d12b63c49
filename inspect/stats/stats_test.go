package stats

import (
	"fmt"
	"math"
	"testing"

	"hsdb/engine/tensor"
)

// TestStatsByHand: values 1, -2, 3, 0, NaN, +Inf. Finite: 1, -2, 3, 0 →
// mean 0.5, population variance (0.25+6.25+6.25+0.25)/4 = 3.25, L2 =
// sqrt(1+4+9) = sqrt(14).
func TestStatsByHand(t *testing.T) {
	s := Of([]float32{1, -2, 3, 0, float32(math.NaN()), float32(math.Inf(1))})
	want := Stats{Count: 6, NaN: 1, Inf: 1, Zeros: 1, Mean: 0.5, Std: math.Sqrt(3.25), Min: -2, Max: 3, AbsMax: 3, L2: math.Sqrt(14)}
	if !(math.Abs(s.Std-want.Std) <= 1e-12) || !(math.Abs(s.L2-want.L2) <= 1e-12) {
		t.Fatalf("std %v l2 %v, want %v %v", s.Std, s.L2, want.Std, want.L2)
	}
	s.Std, s.L2 = want.Std, want.L2
	if s != want {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	if !s.Bad() || s.Finite() != 4 {
		t.Fatalf("Bad %v Finite %d", s.Bad(), s.Finite())
	}
	if v, ok := s.Get("norm"); !ok || v != s.L2 {
		t.Fatalf("Get(norm) = %v %v", v, ok)
	}
	if _, ok := s.Get("median"); ok {
		t.Fatal("Get(median) known")
	}
}

// TestStatsMergedEqualsWhole: Moments merged from two halves give the
// statistics of the whole (the gathered row of a sharded tensor relies on
// it).
func TestStatsMergedEqualsWhole(t *testing.T) {
	v := []float32{0.5, -7, 3.25, 11, -0.125, 2, 9, -4}
	m := tensor.MomentsF32(v[:3])
	m.Merge(tensor.MomentsF32(v[3:]))
	if a, b := FromMoments(m), Of(v); !(math.Abs(a.Std-b.Std) <= 1e-12) || a.Mean != b.Mean || a.Min != b.Min || a.AbsMax != b.AbsMax {
		t.Fatalf("merged %+v whole %+v", a, b)
	}
}

func TestStatsAllNaN(t *testing.T) {
	n := float32(math.NaN())
	s := Of([]float32{n, n})
	if s.Mean != 0 || s.Std != 0 || s.NaN != 2 || s.Finite() != 0 {
		t.Fatalf("%+v", s)
	}
}

// TestHistogramByHand: 0..9 in 5 bins of width 1.8 → edges 0, 1.8, 3.6,
// 5.4, 7.2, 9: counts {0,1}, {2,3}, {4,5}, {6,7}, {8,9} = 2 each.
func TestHistogramByHand(t *testing.T) {
	v := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, float32(math.NaN())}
	h := Histogram(v, 5)
	if len(h.Counts) != 5 {
		t.Fatalf("%d bins %v, want 5", len(h.Counts), h.Counts)
	}
	for i, c := range h.Counts {
		if c != 2 {
			t.Fatalf("bin %d: %d (%v)", i, c, h.Counts)
		}
	}
	if h.NaN != 1 || h.Lo != 0 || h.Hi != 9 || !(math.Abs(h.Edge(1)-1.8) <= 1e-12) || h.Edge(5) != 9 {
		t.Fatalf("%+v", h)
	}
	if c := Histogram([]float32{3, 3, 3}, 10).Counts; len(c) != 1 || c[0] != 3 {
		t.Fatalf("constant: %v", c)
	}
	if c := Histogram(nil, 4).Counts; c != nil {
		t.Fatalf("empty: %v", c)
	}
}

// TestTopChannels: a [3, 4] tensor whose column 2 holds -100 at row 1
// (a "massive activation"): it ranks first; |values| sorted are
// 0.1..0.9 plus 5 and 100, median of 12 values = mean of the 6th and 7th.
func TestTopChannels(t *testing.T) {
	v := []float32{
		0.1, 0.2, 0.3, 5,
		0.4, 0.5, -100, 0.6,
		0.7, 0.8, 0.9, -0.05,
	}
	top := TopChannels(v, 3, 4, 2, 10)
	if len(top) != 2 || top[0].Col != 12 || top[0].Row != 1 || top[0].Value != -100 || top[1].Col != 13 || top[1].Value != 5 {
		t.Fatalf("%+v", top)
	}
	// sorted |v|: .05 .1 .2 .3 .4 .5 .6 .7 .8 .9 5 100 → median (.5+.6)/2
	med := (0.5 + 0.6) / 2
	got, ok := MedianAbs(v)
	if !ok || !(math.Abs(got-med) <= 1e-7) || top[0].Ratio == nil || !(math.Abs(*top[0].Ratio-100/med) <= 1e-4) {
		t.Fatalf("median %v (%v) ratio %v", got, ok, top[0].Ratio)
	}
}

// TestTopRatioZeroMedian: in [2, 3] with four zeros of six the median
// |value| is 0; no entry gets a ratio (not +Inf, not 0/0).
func TestTopRatioZeroMedian(t *testing.T) {
	top := TopChannels([]float32{0, 0, 3, 0, 0, -1}, 2, 3, 3, 0)
	if m, ok := MedianAbs([]float32{0, 0, 3, 0, 0, -1}); m != 0 || !ok || len(top) != 3 {
		t.Fatalf("%+v", top)
	}
	for _, c := range top {
		if c.Ratio != nil {
			t.Fatalf("channel %d: ratio %v with a zero median", c.Col, *c.Ratio)
		}
	}
}

// TestStatsUndefinedWithoutFiniteElements: an all-NaN tensor has counts but
// no mean, std, min, max, absmax or l2: Get gives NaN for them and
// NullFields names them; one finite element defines them again.
func TestStatsUndefinedWithoutFiniteElements(t *testing.T) {
	nan := float32(math.NaN())
	s := Of([]float32{nan, nan, float32(math.Inf(1))})
	if s.Defined() || s.Count != 3 || s.NaN != 2 || s.Inf != 1 {
		t.Fatalf("%+v", s)
	}
	for _, n := range []string{"mean", "std", "min", "max", "absmax", "l2", "norm"} {
		if v, ok := s.Get(n); !ok || !math.IsNaN(v) {
			t.Errorf("%s = %v, want NaN", n, v)
		}
	}
	if v, _ := s.Get("nan"); v != 2 {
		t.Errorf("nan = %v", v)
	}
	if got := fmt.Sprint(s.NullFields()); got != "[mean std min max absmax l2]" {
		t.Errorf("NullFields %s", got)
	}
	s = Of([]float32{nan, -2})
	if v, _ := s.Get("min"); !s.Defined() || v != -2 || s.NullFields() != nil {
		t.Errorf("one finite element: %+v", s)
	}
}

func TestCompare(t *testing.T) {
	d, err := Compare([]float32{1, 2, 3, float32(math.NaN())}, []float32{1, 2.5, 1, float32(math.NaN())})
	if err != nil || d.Equal || d.First != 1 || d.FirstA != 2 || d.FirstB != 2.5 || d.Differ != 2 || d.MaxAbs != 2 || d.MaxAt != 2 {
		t.Fatalf("%+v %v", d, err)
	}
	if d, _ := Compare([]float32{1, 2}, []float32{1, 2}); !d.Equal || d.First != -1 {
		t.Fatalf("%+v", d)
	}
	if _, err := Compare([]float32{1}, nil); err == nil {
		t.Fatal("length mismatch accepted")
	}
}

// TestCosine: cosine similarity from accumulated sums, against values
// derived by hand: a = (1, 0), b = (1, 1) gives dot 1, |a|² 1, |b|² 2,
// cos 1/√2; opposite vectors -1; two zero vectors 1, one zero vector 0;
// NaN sums give NaN (callers compare with >= and so fail closed).
func TestCosine(t *testing.T) {
	for _, c := range []struct {
		dot, aa, bb, want float64
	}{
		{1, 1, 2, 1 / math.Sqrt2},
		{-4, 4, 4, -1},
		{0, 0, 0, 1},
		{0, 0, 3, 0},
		{0, 5, 0, 0},
	} {
		if got := Cosine(c.dot, c.aa, c.bb); !(math.Abs(got-c.want) <= 1e-15) {
			t.Errorf("Cosine(%v, %v, %v) = %v, want %v", c.dot, c.aa, c.bb, got, c.want)
		}
	}
	if got := Cosine(math.NaN(), 1, 1); !math.IsNaN(got) || got >= 0.99 {
		t.Errorf("Cosine of NaN sums = %v, want NaN", got)
	}
}

// TestMedianAbsNoFinite: a tensor with no finite element has no median
// |value| (false, not a median of 0); NaN and ±Inf are left out of a mixed
// one: |{NaN, 2, -Inf, -4, 1}| finite = {1, 2, 4} → 2.
func TestMedianAbsNoFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, v := range [][]float32{{nan, nan}, {inf, -inf}, {nan, inf}, {}} {
		if m, ok := MedianAbs(v); ok {
			t.Errorf("MedianAbs(%v) = %v, true; want no median", v, m)
		}
		if top := TopChannels(v, 1, len(v), 3, 0); len(top) != 0 {
			t.Errorf("TopChannels(%v) = %+v, want none", v, top)
		}
	}
	if m, ok := MedianAbs([]float32{nan, 2, -inf, -4, 1}); !ok || m != 2 {
		t.Errorf("mixed: %v, %v; want 2", m, ok)
	}
}

// TestCompareNonFinite: two copies that differ only where one holds NaN
// (set var stream[4, 0] = nan --rank 1) were shown max |Δ| 0 by `ranks`
// and print's "|Δ| vs rank0" column (while lens said NaN): |1 - NaN| is
// NaN, |1 - Inf| and |Inf - (-Inf)| are +Inf, as torch's
// (a - b).abs().max() gives them; a finite difference elsewhere does not
// hide them.
func TestCompareNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		a, b []float32
		max  float64
		at   int
	}{
		{[]float32{1, 2}, []float32{1, nan}, math.NaN(), 1},
		{[]float32{5, 2, 3}, []float32{1, nan, 3}, math.NaN(), 1},
		{[]float32{1, 2, 3}, []float32{1, 2, inf}, math.Inf(1), 2},
		{[]float32{inf, 0}, []float32{-inf, 7}, math.Inf(1), 0},
		{[]float32{1, inf}, []float32{2, inf}, 1, 0},
	} {
		d, err := Compare(c.a, c.b)
		same := d.MaxAbs == c.max || math.IsNaN(d.MaxAbs) && math.IsNaN(c.max)
		if err != nil || d.Equal || !same || d.MaxAt != c.at {
			t.Errorf("%v vs %v: max |Δ| %v at %d (%v), want %v at %d", c.a, c.b, d.MaxAbs, d.MaxAt, err, c.max, c.at)
		}
	}
}
