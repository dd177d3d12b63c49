package engine

import (
	"math"
	"strings"
	"testing"

	"hsdb/engine/backend"
)

// nanAdd is a CPU device whose Add writes NaN into every element: the op
// that computes each layer's stream (hidden_states + residual) for the
// sites. A comparison that tests `d > tol` lets it through (NaN > tol is
// false); the parity tests must not.
type nanAdd struct{ backend.Device }

func (d nanAdd) Add(a, b backend.Tensor) backend.Tensor {
	return d.Device.Scale(d.Device.Add(a, b), float32(math.NaN()))
}

// TestParityCatchesNaNPoisonedOp: with Add poisoned on every rank, both the
// per-layer HF parity comparison and the reference table report every
// layer's stream as departing (by its NaN), at tp 1 and 2.
func TestParityCatchesNaNPoisonedOp(t *testing.T) {
	saved := wrapCPU
	wrapCPU = func(d backend.Device) backend.Device { return nanAdd{d} }
	defer func() { wrapCPU = saved }()
	for _, tp := range []int{1, 2} {
		errs := hfParityErrors(t, "llama", Options{TP: tp}, 1e-5, 0)
		if n := countContaining(errs, "got NaN"); n != 3*tp {
			t.Errorf("tp %d: parity reported %d NaN streams, want %d (3 layers × %d ranks): %v", tp, n, 3*tp, tp, errs)
		}
		errs = referenceTableErrors(t, "llama", Options{TP: tp})
		if n := countContaining(errs, "got NaN"); n == 0 {
			t.Errorf("tp %d: the reference table reported no NaN: %v", tp, errs)
		}
	}
}

func countContaining(errs []error, s string) int {
	n := 0
	for _, e := range errs {
		if strings.Contains(e.Error(), s) {
			n++
		}
	}
	return n
}
