package capture

import (
	"fmt"
	"math"

	"hsdb/engine/tensor"
	"hsdb/inspect/plural"
)

// convertFinite converts captured tensor t (key k) to the file dtype dt
// and refuses a conversion that makes finite values infinite: f16's
// largest finite value is 65504, so a stream entry of 1e5 became +Inf and
// the dump was refused as "hidden_states.2 has 0 NaN and 1 Inf", as if
// the forward pass had overflowed. The error counts the values past dt's
// range and names the largest and where it is, and says the captured
// values are finite (or, when they are not, how many NaN and Inf the
// capture held before the conversion). Non-finite values already in t
// alone are left for the content rules to report.
func convertFinite(k string, t *tensor.Tensor, dt tensor.DType) (*tensor.Tensor, error) {
	if t.DType == dt {
		return t, nil
	}
	c := t.Convert(dt)
	_, before := nonFinite(t)
	if _, after := nonFinite(c); after <= before {
		return c, nil
	}
	src, conv, cols := t.ToF32(), c.ToF32(), 1
	if len(t.Shape) == 2 {
		cols = t.Shape[1]
	}
	n, at, big := 0, 0, 0.0
	for i, v := range src {
		a := math.Abs(float64(v))
		if math.IsInf(a, 0) || math.IsNaN(a) || !math.IsInf(float64(conv[i]), 0) {
			continue
		}
		n++
		if a > big {
			big, at = a, i
		}
	}
	// The captured values are finite unless the capture held NaN or Inf
	// already (before): then it says so instead, as those are the pass's.
	held := "the captured values are finite"
	if nan, inf := nonFinite(t); nan+inf > 0 {
		held = fmt.Sprintf("the capture also holds %d NaN and %d Inf of its own, which the conversion did not make", nan, inf)
	}
	return nil, fmt.Errorf("%w: %s: %s past %s's range became Inf in the conversion to %s (largest |x| %.6g at token %d, channel %d); %s: write bf16 or f32 instead (--dtype / --save-dtype)",
		ErrInvalid, k, plural.N(n, "finite value"), dt, dt, big, at/cols, at%cols, held)
}
