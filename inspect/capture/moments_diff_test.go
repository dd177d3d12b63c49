package capture

import (
	"math"
	"testing"

	"hsdb/engine/tensor"
)

// TestMomentsDiffFailsClosed: two ranks' moments whose sums both
// overflowed to +Inf gave a NaN difference, and `d > worst` let the
// replica pass as equal. By hand: equal finite moments differ by 0, a
// NaN difference counts as 1 (the largest).
func TestMomentsDiffFailsClosed(t *testing.T) {
	a := tensor.Moments{Count: 4, Sum: 2, SumSq: 4, Min: -1, Max: 2, AbsMax: 2}
	if d := momentsDiff(a, a); d != 0 {
		t.Fatalf("equal moments differ by %v, want 0", d)
	}
	inf := a
	inf.Sum, inf.SumSq = math.Inf(1), math.Inf(1)
	if d := momentsDiff(inf, inf); !(d >= 1) {
		t.Fatalf("moments with overflowed sums differ by %v, want 1 (not shown equal)", d)
	}
}
