// Package cudatest holds the host-side helpers that the tests of
// engine/backend/cuda and of engine/backend/cuda/driver share: random
// inputs that are never exactly zero, rounding to the dtype a kernel reads,
// the tolerance of an output dtype, and an element-wise comparison that
// fails closed on NaN. The helpers that touch a GPU stay in each package's
// helpers_test.go, since the driver's own tests cannot import a package
// built on the driver.
//
// Only tests import it; it imports engine/tensor only (no cgo, no build
// tag).
package cudatest

import (
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

// AssertClose fails t when some |got-want| > atol + rtol·|want| or when got
// has a NaN where want has none; it reports the worst element.
func AssertClose(t testing.TB, name string, got, want []float32, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	worst, wi, bad := 0.0, -1, 0
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) {
			if !math.IsNaN(g) {
				bad++
				if wi < 0 {
					wi = i
				}
			}
			continue
		}
		e := math.Abs(g - w)
		if math.IsNaN(g) || e > atol+rtol*math.Abs(w) {
			bad++
			if math.IsNaN(g) {
				e = math.Inf(1)
			}
		}
		if e > worst || (wi < 0 && bad > 0) {
			worst, wi = e, i
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values off (atol %g rtol %g); worst at %d: got %v want %v", name, bad, len(got), atol, rtol, wi, got[wi], want[wi])
	}
}
