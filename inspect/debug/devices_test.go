package debug

import (
	"errors"
	"sync"
	"testing"

	"hsdb/engine"
)

// testDevices are the backends the intervention and view tests run on:
// the same assertions, against the same independent references, on the
// CPU and on CUDA (a binary built with -tags cuda on a GPU machine:
// scripts/gpu-debug-tests.sh).
var testDevices = []string{"cpu", "cuda"}

var deviceErrs sync.Map // device -> error of opening stories260K on it (nil: usable)

// forEachDevice runs body once per backend as subtests named "cpu" and
// "cuda". The cuda subtest skips, saying why, when the binary was built
// without -tags cuda or no usable GPU is present (engine.ErrDevice); any
// other failure to open the device fails it.
func forEachDevice(t *testing.T, body func(t *testing.T, dev string)) {
	t.Helper()
	for _, dev := range testDevices {
		t.Run(dev, func(t *testing.T) {
			t.Helper()
			v, ok := deviceErrs.Load(dev)
			if !ok {
				e, err := engine.LoadLlama2C(storiesBin, engine.Options{TP: 1, Device: dev})
				if err == nil {
					e.Close()
				}
				v, _ = deviceErrs.LoadOrStore(dev, errBox{err})
			}
			if err := v.(errBox).err; err != nil {
				if errors.Is(err, engine.ErrDevice) {
					t.Skipf("no %s backend here: %v", dev, err)
				}
				t.Fatalf("opening %s: %v", dev, err)
			}
			body(t, dev)
		})
	}
}

type errBox struct{ err error }
