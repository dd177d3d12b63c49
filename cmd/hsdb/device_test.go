package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
)

// fakeCUDAWorker writes an executable script that answers --probe with
// out and exit status code, and names it in $HSDB_CUDA_WORKER.
func fakeCUDAWorker(t *testing.T, out string, code int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), cudaWorkerName)
	script := "#!/bin/sh\necho '" + out + "'\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cudaWorkerEnv, p)
	return p
}

// noCUDAWorker hides any installed CUDA worker: $HSDB_CUDA_WORKER empty,
// this executable in an empty directory and PATH another.
func noCUDAWorker(t *testing.T) {
	t.Setenv(cudaWorkerEnv, "")
	t.Setenv("PATH", t.TempDir())
	exe := filepath.Join(t.TempDir(), "hsdb")
	old := executable
	executable = func() (string, error) { return exe, nil }
	t.Cleanup(func() { executable = old })
}

// TestDeviceChoice: --device defaults to cuda, one worker process per
// rank, exactly when the CUDA worker is found and its probe sees a GPU,
// else to cpu with the reason; --device cuda uses the CUDA worker, else
// runs in process in a -tags cuda build, else fails naming the install
// command; --workers=false keeps CUDA ranks in process.
func TestDeviceChoice(t *testing.T) {
	t.Run("no worker", func(t *testing.T) {
		noCUDAWorker(t)
		dc, err := (&modelFlags{}).chooseDevice()
		if err != nil || dc.device != "cpu" || dc.workers || !strings.Contains(dc.why, "no hsdb-cuda-worker next to hsdb or on PATH") {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
	t.Run("worker sees a GPU", func(t *testing.T) {
		p := fakeCUDAWorker(t, "1 GPU(s), CUDA driver 13.0, driver API gorgonia.org/cu", 0)
		dc, err := (&modelFlags{}).chooseDevice()
		if err != nil || dc.device != "cuda" || !dc.workers || len(dc.command) != 1 || dc.command[0] != p ||
			!strings.Contains(dc.why, "defaulted to cuda") || !strings.Contains(dc.why, "1 GPU(s)") {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
	t.Run("worker sees no GPU", func(t *testing.T) {
		fakeCUDAWorker(t, "Error in initialization: NoDevice", 1)
		dc, err := (&modelFlags{}).chooseDevice()
		if err != nil || dc.device != "cpu" || dc.workers || !strings.Contains(dc.why, "is not used: its --probe failed (exit status 1): Error in initialization: NoDevice") {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
	t.Run("cuda with worker", func(t *testing.T) {
		p := fakeCUDAWorker(t, "1 GPU(s)", 0)
		dc, err := (&modelFlags{device: "cuda"}).chooseDevice()
		if err != nil || dc.device != "cuda" || !dc.workers || dc.command[0] != p {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
	t.Run("cuda without worker", func(t *testing.T) {
		noCUDAWorker(t)
		dc, err := (&modelFlags{device: "cuda"}).chooseDevice()
		if engine.CUDABuiltIn() {
			if err != nil || dc.device != "cuda" || dc.workers || !strings.Contains(dc.why, "in process") {
				t.Errorf("-tags cuda build: got %+v, %v", dc, err)
			}
			return
		}
		if !errors.Is(err, engine.ErrDevice) || !strings.Contains(err.Error(), "go install -tags cuda,cu ./cmd/hsdb-cuda-worker") {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
	t.Run("cuda in process", func(t *testing.T) {
		fakeCUDAWorker(t, "1 GPU(s)", 0)
		m := &modelFlags{device: "cuda"}
		m.workers.Set("false")
		dc, err := m.chooseDevice()
		if engine.CUDABuiltIn() != (err == nil) || (err == nil && (dc.workers || dc.device != "cuda")) {
			t.Errorf("CUDA built in %v: got %+v, %v", engine.CUDABuiltIn(), dc, err)
		}
	})
	t.Run("cpu", func(t *testing.T) {
		fakeCUDAWorker(t, "1 GPU(s)", 0)
		dc, err := (&modelFlags{device: "cpu"}).chooseDevice()
		if err != nil || dc.device != "cpu" || dc.workers {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
}

// TestCUDAWorkerWithoutGPU runs the real CUDA worker (cmd/hsdb-cuda-worker,
// over gorgonia.org/cu; scripts/ci-cuda-vet.sh builds it and names it in
// $HSDB_TEST_CUDA_WORKER) on a machine without a GPU: cu's init ends the
// worker, and the front survives it — without --device it falls back to
// cpu and says why (`info model`), with --device cuda it reports that
// rank 0's worker ended before joining.
func TestCUDAWorkerWithoutGPU(t *testing.T) {
	bin := os.Getenv("HSDB_TEST_CUDA_WORKER")
	if bin == "" {
		t.Skip("HSDB_TEST_CUDA_WORKER is not set (scripts/ci-cuda-vet.sh builds the CUDA worker and sets it)")
	}
	if line, err := probeCUDAWorker(bin); err == nil {
		t.Skipf("this machine has a GPU (%s): the GPU runs cover it", line)
	}
	t.Setenv(cudaWorkerEnv, bin)
	script := filepath.Join(t.TempDir(), "info.hsdb")
	if err := os.WriteFile(script, []byte("info model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runWithStdin([]string{"--tp", "2", "-x", script}, "")
	if code != 0 || !strings.Contains(out, "rank 1 cpu:1") || !strings.Contains(out, "--device defaulted to cpu: "+bin+" is not used: its --probe failed") {
		t.Errorf("without --device: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runWithStdin([]string{"--device", "cuda", "--tp", "2", "-x", script}, "")
	if code != 1 || !strings.Contains(errs, "rank 0: the worker exited before joining (exit status") {
		t.Errorf("--device cuda: exit %d\n%s\n%s", code, out, errs)
	}
}
