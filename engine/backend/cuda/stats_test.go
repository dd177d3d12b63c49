//go:build cuda

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"hsdb/engine/tensor"
)

// TestMoments compares the device statistics of a slice with
// tensor.Moments accumulated on the host over the same (dtype-rounded)
// values, with NaN, ±Inf and zeros planted inside and outside the slice.
func TestMoments(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(31, 32))
	rows, cols := 300, 5000
	r0, r1, c0, c1 := 7, 290, 123, 4999
	for _, dt := range floatDTypes {
		v := roundTo(randn(rng, rows*cols, 3), dt)
		for range 50 {
			v[rng.IntN(len(v))] = float32(math.NaN())
			v[rng.IntN(len(v))] = float32(math.Inf(1 - 2*rng.IntN(2)))
			v[rng.IntN(len(v))] = 0
		}
		var want tensor.Moments
		for r := r0; r < r1; r++ {
			for c := c0; c < c1; c++ {
				want.Add(float64(v[r*cols+c]))
			}
		}
		got, err := d.Moments(upload(t, d, v, dt).Ptr(), dt, rows, cols, r0, r1, c0, c1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Count != want.Count || got.NaN != want.NaN || got.Inf != want.Inf || got.Zeros != want.Zeros ||
			got.Min != want.Min || got.Max != want.Max || got.AbsMax != want.AbsMax {
			t.Errorf("%s: counts/extremes %+v, want %+v", dt, got, want)
		}
		// Sums differ only by f64 summation order: relative 1e-9 of the
		// sum of magnitudes is far above that and far below any real error.
		var absSum float64
		for r := r0; r < r1; r++ {
			for c := c0; c < c1; c++ {
				if x := float64(v[r*cols+c]); !math.IsNaN(x) && !math.IsInf(x, 0) {
					absSum += math.Abs(x)
				}
			}
		}
		if !(math.Abs(got.Sum-want.Sum) <= 1e-9*absSum) || !(math.Abs(got.SumSq-want.SumSq) <= 1e-9*want.SumSq) {
			t.Errorf("%s: sum %v sumsq %v, want %v %v", dt, got.Sum, got.SumSq, want.Sum, want.SumSq)
		}
		if want.NaN == 0 || want.Inf == 0 || want.Zeros == 0 {
			t.Fatalf("the planted NaN/Inf/zeros missed the slice: %+v", want)
		}
	}
	// An all-NaN slice has no finite value: min, max, absmax are 0.
	nan := []float32{float32(math.NaN()), float32(math.NaN())}
	got, err := d.Moments(upload(t, d, nan, tensor.F32).Ptr(), tensor.F32, 1, 2, 0, 1, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got != (tensor.Moments{Count: 2, NaN: 2}) {
		t.Errorf("all-NaN moments %+v", got)
	}
	if _, err := d.Moments(0, tensor.F32, 2, 2, 0, 3, 0, 1); !errorsIsBadArgument(err) {
		t.Errorf("slice past the rows: err = %v, want ErrBadArgument", err)
	}
}
