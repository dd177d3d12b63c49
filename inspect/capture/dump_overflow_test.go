package capture

import (
	"errors"
	"math"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// TestConvertFiniteNamesOverflow: f16's largest finite value is 65504, so
// 70000 and -1e5 become ±Inf when a [2, 3] f32 capture is converted, and
// the dump was refused as "has 0 NaN and 2 Inf"; convertFinite counts
// them, names the largest (1e5 at row 1, column 1) and says the captured
// values were finite. 65504 itself and bf16 (max ~3.39e38) convert; an
// Inf already captured is left to the content rules.
func TestConvertFiniteNamesOverflow(t *testing.T) {
	x := tensor.FromF32([]float32{1, 70000, -2, 3, -1e5, 65504}, 2, 3)
	_, err := convertFinite("hidden_states.4", x, tensor.F16)
	want := "hidden_states.4: 2 finite values past f16's range became Inf in the conversion to f16 (largest |x| 100000 at token 1, channel 1)"
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("f16: %v, want %q", err, want)
	}
	if c, err := convertFinite("hidden_states.4", x, tensor.BF16); err != nil || c.DType != tensor.BF16 {
		t.Errorf("bf16: %v", err)
	}
	ok := tensor.FromF32([]float32{65504, -65504}, 1, 2)
	if c, err := convertFinite("k", ok, tensor.F16); err != nil || c.ToF32()[0] != 65504 {
		t.Errorf("65504 to f16: %v", err)
	}
	inf := tensor.FromF32([]float32{float32(math.Inf(1)), 1}, 1, 2)
	if _, err := convertFinite("k", inf, tensor.F16); err != nil {
		t.Errorf("an Inf already captured: %v, want it left to the content rules", err)
	}
}

// TestConvertOverflowBesideNaN: a capture holding a NaN of its own and a
// finite 1e5 that f16 makes Inf was refused as "the captured values are
// finite", which the NaN belies; it now counts the capture's own NaN (1)
// and Inf (0) instead.
func TestConvertOverflowBesideNaN(t *testing.T) {
	x := tensor.FromF32([]float32{float32(math.NaN()), 1e5, 1, 2}, 2, 2)
	_, err := convertFinite("hidden_states.0", x, tensor.F16)
	if err == nil || strings.Contains(err.Error(), "the captured values are finite") ||
		!strings.Contains(err.Error(), "1 finite value past f16's range") || !strings.Contains(err.Error(), "the capture also holds 1 NaN and 0 Inf of its own") {
		t.Errorf("%v", err)
	}
}
