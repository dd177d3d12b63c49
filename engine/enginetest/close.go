package enginetest

import (
	"fmt"
	"math"
	"testing"
)

// Diff is what a comparison of got with a reference want measured: the
// largest absolute difference, the reference's largest magnitude, their
// ratio, the cosine similarity, and the first element where the largest
// difference occurs.
type Diff struct {
	MaxAbs, RefAbsMax, Rel, Cosine float64
	At                             int
}

// Compare measures got against the reference want and fails closed, as
// torch.testing.assert_close does: it returns an error (and the measures so
// far) when the lengths differ or are zero, when want holds NaN or ±Inf or
// is all zero (a degenerate reference proves nothing), or when got holds a
// NaN or ±Inf anywhere. Callers then test the measures with `!(d <= tol)`.
func Compare(got, want []float32) (Diff, error) {
	var d Diff
	if len(got) != len(want) {
		return d, fmt.Errorf("length %d, reference %d", len(got), len(want))
	}
	if len(want) == 0 {
		return d, fmt.Errorf("empty reference")
	}
	var ab, aa, bb float64
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return d, fmt.Errorf("reference holds %v at element %d", w, i)
		}
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return d, fmt.Errorf("got %v at element %d where the reference is %v", g, i, w)
		}
		if a := math.Abs(g - w); a > d.MaxAbs {
			d.MaxAbs, d.At = a, i
		}
		d.RefAbsMax = math.Max(d.RefAbsMax, math.Abs(w))
		ab += g * w
		aa += g * g
		bb += w * w
	}
	if d.RefAbsMax == 0 {
		return d, fmt.Errorf("reference is all zero (%d elements)", len(want))
	}
	d.Rel = d.MaxAbs / d.RefAbsMax
	d.Cosine = ab / math.Sqrt(aa*bb)
	if aa == 0 {
		d.Cosine = 0
	}
	return d, nil
}

// CheckClose returns nil when max|got−want| ≤ rtol · max|want| and Compare
// finds nothing degenerate; otherwise an error with the measures. rtol 0
// asks for bit-equal values.
func CheckClose(got, want []float32, rtol float64) error {
	d, err := Compare(got, want)
	if err != nil {
		return err
	}
	if !(d.Rel <= rtol) {
		return fmt.Errorf("max|Δ| %.3g at element %d is %.3g of max|reference| %.3g, want <= %.3g", d.MaxAbs, d.At, d.Rel, d.RefAbsMax, rtol)
	}
	return nil
}

// CheckCosine returns nil when the cosine similarity of got and want is at
// least min and Compare finds nothing degenerate; otherwise an error.
func CheckCosine(got, want []float32, min float64) error {
	d, err := Compare(got, want)
	if err != nil {
		return err
	}
	if !(d.Cosine >= min) {
		return fmt.Errorf("cosine %.6f, want >= %.6f (max|Δ| %.3g of max|reference| %.3g)", d.Cosine, min, d.Rel, d.RefAbsMax)
	}
	return nil
}

// AssertClose fails t (without stopping it) unless CheckClose passes; what
// names the compared tensor in the message.
func AssertClose(t testing.TB, what string, got, want []float32, rtol float64) bool {
	t.Helper()
	if err := CheckClose(got, want, rtol); err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	return true
}
