package worker

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/backend"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
)

// fakeLostEnv makes a test worker's KernelFaultEnv injection fail with
// errFakeLost, an error that loses the device's context: the CPU stand-in
// for an out-of-bounds kernel of a CUDA worker (cuda_fault_test.go runs
// the real one on a GPU).
const fakeLostEnv = "HSDB_TEST_FAKE_CONTEXT_LOSS"

var errFakeLost = errors.New("fake device fault: the context is lost")

func fakeContextLoss() {
	injectKernelFault = func(backend.Device) error { return errFakeLost }
	contextLost = func(err error) bool { return errors.Is(err, errFakeLost) }
}

// TestWorkerContextLost: a worker whose device context is lost at a site
// (KernelFaultEnv, on rank 1 only, once) ends with exit status 3 and its
// error as last words; the prefill fails with ErrWorker naming rank 1, the
// error and the site; the next prefill starts a fresh worker (the once
// file keeps it from faulting) and computes exactly the in-process logits.
func TestWorkerContextLost(t *testing.T) {
	t.Setenv(fakeLostEnv, "1")
	t.Setenv(KernelFaultEnv, "model.layers.1@1")
	t.Setenv(KernelFaultOnceEnv, filepath.Join(t.TempDir(), "fired"))
	e, _ := openWorkers(t, "", engine.Options{TP: 2}, Config{Timeout: time.Minute})
	seqs := [][]int32{{1, 403, 407, 261}, {1, 400}}
	hook := model.MultiHook{noSites{}}
	_, err := e.Prefill(seqs, hook, false)
	if !errors.Is(err, engine.ErrWorker) {
		t.Fatalf("prefill: %v, want ErrWorker", err)
	}
	for _, w := range []string{"rank 1", "exit status 3", errFakeLost.Error(), "it was at model.layers.1, step 0"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the report lacks %q: %v", w, err)
		}
	}
	t.Logf("reported: %v", err)
	again, err := e.Prefill(seqs, hook, false)
	if err != nil {
		t.Fatalf("prefill after the loss: %v", err)
	}
	local, err := engine.Open("", engine.Options{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	want, err := local.Prefill(seqs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := enginetest.CheckClose(again.Values.F32(), want.Values.F32(), 0); err != nil {
		t.Errorf("logits of the fresh worker vs in process: %v", err)
	}
}
