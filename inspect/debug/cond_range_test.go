package debug

import (
	"math"
	"testing"
)

// TestCase25NumberBeyondFloat64: cases/README.md case 25 — a literal past
// float64's range is +Inf, as IEEE 754 rounding (and Python's
// float("1e400")) gives, not a "bad number": `absmax(residual) > 1e400` is
// false for any finite absmax, `absmax(residual) < 1e400` true, and
// 1e-400 rounds to 0. Values worked out by hand against the fake site of
// TestCondEval (residual absmax 2e4).
func TestCase25NumberBeyondFloat64(t *testing.T) {
	env := fakeEnv{"residual": {AbsMax: 2e4, Count: 10}}
	for src, want := range map[string]float64{
		"absmax(residual) > 1e400":   0,
		"absmax(residual) < 1e400":   1,
		"absmax(residual) > -1e400":  1,
		"absmax(residual) > 1e-400":  1,
		"1e-400 == 0":                1,
		"1e400 == 2e400":             1,
		"absmax(residual) < 1.8e308": 1,
	} {
		c, err := ParseCond(src, "")
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got, ok := c.eval(env); !ok || got != want {
			t.Errorf("%s = %v %v, want %v", src, got, ok, want)
		}
	}
	c, err := ParseCond("1e400", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.eval(env); !math.IsInf(got, 1) {
		t.Fatalf("1e400 = %v, want +Inf", got)
	}
	if _, err := ParseCond("absmax(residual) > 1e+", ""); err == nil {
		t.Fatal("1e+ accepted")
	}
}
