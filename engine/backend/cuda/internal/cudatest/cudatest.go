// Package cudatest holds the host-side helpers that the tests of
// engine/backend/cuda and of engine/backend/cuda/driver share: random
// inputs that are never exactly zero, rounding to the dtype a kernel reads,
// the tolerance of an output dtype, and an element-wise comparison that
// fails closed (NaN, a length mismatch, an empty or all-zero reference). The helpers that touch a GPU stay in each package's
// helpers_test.go, since the driver's own tests cannot import a package
// built on the driver.
//
// Only tests import it; it imports engine/tensor only (no cgo, no build
// tag).
package cudatest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"hsdb/engine/tensor"
)

// FloatDTypes are the activation dtypes every kernel is instantiated for.
var FloatDTypes = []tensor.DType{tensor.F32, tensor.BF16, tensor.F16}

// Randn returns n values from N(0, scale²) that are never exactly zero, so
// an output left untouched or zeroed by mistake cannot match.
func Randn(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		x := rng.NormFloat64() * scale
		if math.Abs(x) < 1e-3*scale {
			x = 1e-3 * scale
		}
		v[i] = float32(x)
	}
	return v
}

// RoundTo returns v as the device will hold it in dtype dt: the reference
// computations start from exactly the values the kernels read.
func RoundTo(v []float32, dt tensor.DType) []float32 {
	return tensor.FromF32(append([]float32(nil), v...), len(v)).Convert(dt).ToF32()
}

// Tol is the comparison tolerance for outputs stored in dt: one rounding of
// the output (bf16 keeps 8 significant bits, f16 11) plus f32 summation
// order differences.
func Tol(dt tensor.DType) (atol, rtol float64) {
	switch dt {
	case tensor.BF16:
		return 1e-2, 1.6e-2
	case tensor.F16:
		return 2e-3, 2e-3
	}
	return 1e-5, 1e-5
}

// CheckClose compares got with the reference want element-wise and
// fails closed, as torch.testing.assert_close does: it returns nil only
// when the lengths agree and are not zero, every reference value is finite,
// some reference value is not zero (an all-zero reference cannot tell a
// kernel that wrote nothing from one that worked), and every element has
// |got−want| <= atol + rtol·|want| (written `!(e <= bound)`, so a NaN or
// ±Inf in got fails). The error counts the elements off and names the
// worst.
func CheckClose(got, want []float32, atol, rtol float64) error {
	return check(got, want, atol, rtol, false)
}

// CheckCloseNaN is CheckClose for a reference that holds NaN on purpose
// (an op that must propagate NaN inputs, such as fp8 dequantisation of
// the NaN bytes 0x7f and 0xff): got must be NaN exactly where want is
// NaN, and the other elements are compared as CheckClose compares them
// (some of them must be non-zero).
func CheckCloseNaN(got, want []float32, atol, rtol float64) error {
	return check(got, want, atol, rtol, true)
}

func check(got, want []float32, atol, rtol float64, nanWanted bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, reference %d", len(got), len(want))
	}
	if len(want) == 0 {
		return fmt.Errorf("empty reference")
	}
	worst, wi, bad, nonzero := -1.0, -1, 0, false
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		var e, bound float64
		switch {
		case math.IsNaN(w) && nanWanted:
			if e = 0; !math.IsNaN(g) {
				e = math.Inf(1)
			}
		case math.IsNaN(w) || math.IsInf(w, 0):
			return fmt.Errorf("reference holds %v at element %d", w, i)
		default:
			nonzero = nonzero || w != 0
			if e, bound = math.Abs(g-w), atol+rtol*math.Abs(w); math.IsNaN(e) {
				e = math.Inf(1)
			}
		}
		if !(e <= bound) {
			bad++
			if e > worst {
				worst, wi = e, i
			}
		}
	}
	if !nonzero {
		return fmt.Errorf("reference is all zero (%d elements)", len(want))
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d values off (atol %g rtol %g); worst at %d: got %v want %v", bad, len(got), atol, rtol, wi, got[wi], want[wi])
	}
	return nil
}

// AssertClose fails t (without stopping it) unless CheckClose passes;
// name labels the compared tensor in the message.
func AssertClose(t testing.TB, name string, got, want []float32, atol, rtol float64) {
	t.Helper()
	if err := CheckClose(got, want, atol, rtol); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// AssertCloseNaN fails t (without stopping it) unless CheckCloseNaN
// passes: the deliberate form for a reference with expected NaNs.
func AssertCloseNaN(t testing.TB, name string, got, want []float32, atol, rtol float64) {
	t.Helper()
	if err := CheckCloseNaN(got, want, atol, rtol); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}
