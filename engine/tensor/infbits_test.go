package tensor

import (
	"math"
	"testing"
)

// TestInfBits: each float dtype's pattern decodes to +Inf (checked through
// math's own decoders and the package's bf16/f16 widenings), and dtypes
// without an Inf report none.
func TestInfBits(t *testing.T) {
	for _, c := range []struct {
		d      DType
		decode func(uint64) float64
	}{
		{BF16, func(b uint64) float64 { return float64(BF16ToF32(uint16(b))) }},
		{F16, func(b uint64) float64 { return float64(F16ToF32(uint16(b))) }},
		{F32, func(b uint64) float64 { return float64(math.Float32frombits(uint32(b))) }},
		{F64, math.Float64frombits},
	} {
		b, ok := c.d.InfBits()
		if !ok || !math.IsInf(c.decode(b), 1) {
			t.Errorf("%s: InfBits %#x, %v; want the pattern of +Inf", c.d, b, ok)
		}
	}
	for _, d := range []DType{F8E4M3, I32, I64, U8} {
		if b, ok := d.InfBits(); ok {
			t.Errorf("%s: InfBits %#x, true; want none", d, b)
		}
	}
}
