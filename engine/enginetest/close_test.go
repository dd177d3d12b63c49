package enginetest

import (
	"math"
	"strings"
	"testing"
)

// TestCompareFailsClosed: every degenerate input is an error, never a pass
// (the comparison a NaN-writing op once slipped through: NaN > tol is false).
func TestCompareFailsClosed(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		name      string
		got, want []float32
		msg       string
	}{
		{"nan in got", []float32{1, nan}, []float32{1, 2}, "got NaN"},
		{"inf in got", []float32{inf, 2}, []float32{1, 2}, "got +Inf"},
		{"all-nan got", []float32{nan, nan}, []float32{1, 2}, "got NaN"},
		{"nan in reference", []float32{1, 2}, []float32{1, nan}, "reference holds NaN"},
		{"length", []float32{1, 2}, []float32{1, 2, 3}, "length 2, reference 3"},
		{"empty", nil, nil, "empty reference"},
		{"all-zero reference", []float32{0, 0}, []float32{0, 0}, "all zero"},
	} {
		if err := CheckClose(c.got, c.want, 1); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: CheckClose = %v, want an error containing %q", c.name, err, c.msg)
		}
		if err := CheckCosine(c.got, c.want, -1); err == nil {
			t.Errorf("%s: CheckCosine passed", c.name)
		}
	}
}

// TestCheckCloseValues: measures by hand. got [1, 2.5, -3] vs want
// [1, 2, -4]: max|Δ| = 1 at element 2, max|want| = 4, rel 0.25; cosine =
// (1 + 5 + 12) / (sqrt(1+6.25+9)·sqrt(1+4+16)) = 18 / sqrt(16.25·21).
func TestCheckCloseValues(t *testing.T) {
	got, want := []float32{1, 2.5, -3}, []float32{1, 2, -4}
	d, err := Compare(got, want)
	if err != nil {
		t.Fatal(err)
	}
	cos := 18 / math.Sqrt(16.25*21)
	if d.MaxAbs != 1 || d.At != 2 || d.RefAbsMax != 4 || d.Rel != 0.25 || !(math.Abs(d.Cosine-cos) <= 1e-12) {
		t.Fatalf("Compare = %+v, want MaxAbs 1 At 2 RefAbsMax 4 Rel 0.25 Cosine %v", d, cos)
	}
	if CheckClose(got, want, 0.25) != nil || CheckClose(got, want, 0.2499) == nil {
		t.Fatal("CheckClose threshold at rel 0.25 wrong")
	}
	if CheckCosine(got, want, cos-1e-9) != nil || CheckCosine(got, want, cos+1e-9) == nil {
		t.Fatal("CheckCosine threshold wrong")
	}
	if CheckClose(want, want, 0) != nil {
		t.Fatal("equal values fail rtol 0")
	}
}
