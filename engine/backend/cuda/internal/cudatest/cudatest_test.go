package cudatest

import (
	"math"
	"strings"
	"testing"
)

// TestCheckCloseFailsClosed: each case's verdict is derived by hand from
// the rule |got−want| <= atol + rtol·|want| and the fail-closed
// conditions (length mismatch, empty or all-zero reference, NaN or ±Inf).
func TestCheckCloseFailsClosed(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		name       string
		got, want  []float32
		atol, rtol float64
		nanWanted  bool
		err        string // "" passes; otherwise a part of the error
	}{
		{"equal", []float32{1, -2, 0}, []float32{1, -2, 0}, 0, 0, false, ""},
		// 1.05 vs 1: |Δ| 0.05 <= 0.01 + 0.1·1 = 0.11; 2.5 vs 2: 0.5 > 0.01 + 0.2.
		{"within atol+rtol", []float32{1.05}, []float32{1}, 0.01, 0.1, false, ""},
		{"outside atol+rtol", []float32{1.05, 2.5}, []float32{1, 2}, 0.01, 0.1, false, "1 of 2 values off"},
		{"worst named", []float32{1.5, 3, 3}, []float32{1, 2, 2.9}, 0, 0, false, "worst at 1: got 3 want 2"},
		{"length mismatch", []float32{1, 2}, []float32{1, 2, 3}, 1, 1, false, "2 values, reference 3"},
		{"empty", nil, nil, 1, 1, false, "empty reference"},
		{"all-zero reference", []float32{0, 0}, []float32{0, 0}, 1, 1, false, "all zero"},
		{"nan in got", []float32{1, nan}, []float32{1, 2}, 1, 1, false, "1 of 2 values off"},
		{"inf in got", []float32{1, inf}, []float32{1, 2}, 1, 1, false, "1 of 2 values off"},
		{"nan in reference", []float32{nan, 1}, []float32{nan, 1}, 1, 1, false, "reference holds NaN at element 0"},
		{"inf in reference", []float32{inf, 1}, []float32{inf, 1}, 1, 1, false, "reference holds +Inf at element 0"},
		{"nan wanted and got", []float32{nan, 1}, []float32{nan, 1}, 0, 0, true, ""},
		{"nan wanted, finite got", []float32{0, 1}, []float32{nan, 1}, 1, 1, true, "1 of 2 values off"},
		{"nan got where finite wanted", []float32{nan, nan}, []float32{nan, 1}, 1, 1, true, "1 of 2 values off"},
		{"nan wanted, rest all zero", []float32{nan, 0}, []float32{nan, 0}, 0, 0, true, "all zero"},
		{"nan wanted, inf reference", []float32{nan, inf}, []float32{nan, inf}, 0, 0, true, "reference holds +Inf"},
	} {
		var err error
		if c.nanWanted {
			err = CheckCloseNaN(c.got, c.want, c.atol, c.rtol)
		} else {
			err = CheckClose(c.got, c.want, c.atol, c.rtol)
		}
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v, want a pass", c.name, err)
		case c.err != "" && err == nil:
			t.Errorf("%s: passes, want an error with %q", c.name, c.err)
		case c.err != "" && !strings.Contains(err.Error(), c.err):
			t.Errorf("%s: error %q, want one with %q", c.name, err, c.err)
		}
	}
}
