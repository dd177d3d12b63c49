package cpu

import (
	"math"
	"testing"
)

// TestExpNeg compares expNeg with the float64 exponential over [-90, 0]:
// relative error within 3e-7 (2 ulp of float32) where the result is a
// normal float32, 0 below the float32 underflow.
func TestExpNeg(t *testing.T) {
	for i := 0; i <= 900000; i++ {
		x := -float32(i) / 10000
		want := math.Exp(float64(x))
		got := float64(expNeg(x))
		if want < 1.2e-38 {
			if !(got <= 1.2e-38) {
				t.Fatalf("expNeg(%v) = %v, want underflow", x, got)
			}
			continue
		}
		rel := math.Abs(got-want) / want
		if !(rel <= 3e-7) {
			t.Fatalf("expNeg(%v) = %v, want %v (relative error %.3g)", x, got, want, rel)
		}
	}
	if expNeg(0) != 1 {
		t.Fatalf("expNeg(0) = %v", expNeg(0))
	}
}

func BenchmarkExpNeg(b *testing.B) {
	s := float32(0)
	for i := range b.N {
		s += expNeg(-float32(i&1023) / 64)
	}
	_ = s
}

func BenchmarkMathExp(b *testing.B) {
	s := float32(0)
	for i := range b.N {
		s += float32(math.Exp(float64(-float32(i&1023) / 64)))
	}
	_ = s
}
