package engine

import (
	"errors"
	"io"
	"sync"
	"testing"

	"hsdb/engine/tensor"
)

// testDevices are the backends every engine test body runs on.
var testDevices = []string{"cpu", "cuda"}

// forEachDevice runs body once per backend as subtests named "cpu" and
// "cuda". The cuda subtest skips, saying why, when the test binary was
// built without -tags cuda or no usable GPU is present; any other failure
// to open the GPU fails it. Tests elsewhere in engine (fixture parity,
// architectures) use it the same way:
//
//	forEachDevice(t, func(t *testing.T, dev string) {
//		e := loadStoriesOn(t, dev, 2)
//		...
//	})
func forEachDevice(t *testing.T, body func(t *testing.T, dev string)) {
	t.Helper()
	for _, dev := range testDevices {
		t.Run(dev, func(t *testing.T) {
			t.Helper()
			if err := deviceAvailable(dev); err != nil {
				if errors.Is(err, ErrDevice) {
					t.Skipf("no %s backend here: %v", dev, err)
				}
				t.Fatalf("opening %s: %v", dev, err)
			}
			body(t, dev)
		})
	}
}

var cudaProbe struct {
	once sync.Once
	err  error
}

// deviceAvailable reports whether dev can run here: nil, an error wrapping
// ErrDevice when the backend is absent (not built, no GPU), or another
// error when it is present but fails. CUDA is probed once per test binary
// by opening one rank.
func deviceAvailable(dev string) error {
	if dev != "cuda" {
		return nil
	}
	cudaProbe.once.Do(func() {
		devs, _, _, err := newDevices(Options{Device: "cuda"}, 1, tensor.F32)
		if err != nil {
			cudaProbe.err = err
			return
		}
		for _, d := range devs {
			if c, ok := d.(io.Closer); ok {
				c.Close()
			}
		}
	})
	return cudaProbe.err
}

// relTol is the largest relative difference (max|a-b| / max|b|) allowed
// between two float32 runs of the same model on dev that differ only in
// batching, world size or prefill versus decode: summation order. cuBLAS
// picks its algorithm per shape, so CUDA gets 1e-4.
func relTol(dev string) float64 {
	if dev == "cuda" {
		return 1e-4
	}
	return 1e-5
}

// loadStoriesOn loads testdata's stories260K on dev with world size tp
// and closes it when the test ends.
func loadStoriesOn(t testing.TB, dev string, tp int) *Engine {
	t.Helper()
	return loadStoriesOpts(t, Options{TP: tp, Device: dev})
}

// loadStoriesOpts is loadStoriesOn with every option.
func loadStoriesOpts(t testing.TB, o Options) *Engine {
	t.Helper()
	e, err := LoadLlama2C(storiesBin, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
