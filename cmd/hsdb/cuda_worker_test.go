package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hsdb/engine/worker"
)

// requireCUDAWorkerGPU returns the CUDA worker named by
// $HSDB_TEST_CUDA_WORKER, or skips unless it is set and sees a GPU.
func requireCUDAWorkerGPU(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HSDB_TEST_CUDA_WORKER")
	if bin == "" {
		t.Skip("HSDB_TEST_CUDA_WORKER is not set (the GPU runs name the CUDA worker binary)")
	}
	line, err := probeCUDAWorker(bin)
	if err != nil {
		t.Skipf("the CUDA worker sees no GPU here: %v", err)
	}
	t.Logf("%s: %s", bin, line)
	t.Setenv(cudaWorkerEnv, bin)
	return bin
}

// deviceNames matches the device names and the device-choice line, which
// differ between a CPU and a CUDA session by design.
var deviceNames = regexp.MustCompile(`(cpu:\d+|cuda:\d+(/rank\d+)?)`)

func withoutDevices(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "device choice") || strings.HasPrefix(l, "devices ") {
			continue
		}
		keep = append(keep, deviceNames.ReplaceAllString(l, "DEV"))
	}
	return strings.Join(keep, "\n")
}

// TestCUDAWorkerQuickstart: README's quickstart at --tp 2 with no --device
// on a machine where the CUDA worker (gorgonia.org/cu) sees a GPU runs on
// cuda, one worker process per rank, says so in `info model`, and prints
// what the CPU ranks print (every statistic, gathered tensor, backtrace
// and next token), device names aside.
func TestCUDAWorkerQuickstart(t *testing.T) {
	requireCUDAWorkerGPU(t)
	args := []string{"--tp", "2", "-x", "../../scripts/quickstart.hsdb"}
	code, got, errs := runWithStdin(args, "")
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s\n%s", args, code, got, errs)
	}
	if !strings.Contains(got, "--device defaulted to cuda") || !strings.Contains(got, "rank 1 cuda:0") {
		t.Errorf("the quickstart did not run on CUDA workers:\n%s", got)
	}
	code, want, errs := runWithStdin(append([]string{"--device", "cpu"}, args...), "")
	if code != 0 {
		t.Fatalf("--device cpu %v: exit %d\n%s", args, code, errs)
	}
	if g, w := withoutDevices(got), withoutDevices(want); g != w {
		gl, wl := strings.Split(g, "\n"), strings.Split(w, "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("line %d: cuda workers %q, cpu %q", i+1, gl[i], wl[i])
			}
		}
		if len(gl) != len(wl) {
			t.Errorf("cuda workers printed %d lines, cpu %d", len(gl), len(wl))
		}
	}
}

// TestCUDAWorkerKernelFaultSession: a kernel fault in rank 1's CUDA worker
// (an out-of-bounds launch at model.layers.1, once) ends that worker, not
// the session: `run` reports rank 1, the driver's error and the site; the
// breakpoint and the capture are kept; the next `run` starts a fresh
// worker and stops at the breakpoint.
func TestCUDAWorkerKernelFaultSession(t *testing.T) {
	requireCUDAWorkerGPU(t)
	t.Setenv(worker.KernelFaultEnv, "model.layers.1@1")
	t.Setenv(worker.KernelFaultOnceEnv, filepath.Join(t.TempDir(), "fired"))
	script := filepath.Join(t.TempDir(), "fault.hsdb")
	if err := os.WriteFile(script, []byte(`set errors continue
input ids 1,403,407,261,378,365 ; ids 1,400,281,350
break layers.3
capture layers 2
run
info breakpoints
capture list
run
print stream
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runWithStdin([]string{"--device", "cuda", "--tp", "2", "-x", script}, "")
	t.Logf("exit %d\n%s\n%s", code, out, errs)
	all := out + errs
	for _, w := range []string{"rank 1", "CUDA_ERROR_ILLEGAL_ADDRESS", "it was at model.layers.1"} {
		if !strings.Contains(all, w) {
			t.Errorf("the session's report lacks %q", w)
		}
	}
	// Kept: the breakpoint (info breakpoints) and the capture (listed again
	// by capture list); then the second run stops at the breakpoint, once,
	// and both ranks print the stream.
	if !regexp.MustCompile(`(?m)^ 1  break  y +layers\.3`).MatchString(out) {
		t.Errorf("info breakpoints lost the breakpoint")
	}
	if n := strings.Count(out, "hidden_states.2  model.layers.2  stream"); n != 2 {
		t.Errorf("the capture is listed %d times, want 2 (capture, capture list)", n)
	}
	if n := strings.Count(out, "Stopped at model.layers.3"); n != 1 {
		t.Errorf("stopped %d times at the breakpoint, want once (after the fresh worker started)", n)
	}
	if !regexp.MustCompile(`(?m)^1 +\[10, 64\]`).MatchString(out) {
		t.Errorf("rank 1 printed no stream after the restart")
	}
}

// TestCUDAWorkerLens: `lens` with each rank's final norm and lm_head
// applied in its CUDA worker prints what the CPU ranks print (f32, the
// printed digits), device names aside.
func TestCUDAWorkerLens(t *testing.T) {
	requireCUDAWorkerGPU(t)
	script := filepath.Join(t.TempDir(), "lens.hsdb")
	if err := os.WriteFile(script, []byte("input ids 1,403,407,261,378,365 ; ids 1,400,281,350\nbreak layers.1\nrun\nlens 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, got, errs := runWithStdin([]string{"--device", "cuda", "--tp", "2", "-x", script}, "")
	if code != 0 || !strings.Contains(got, "stream → norm → lm_head") {
		t.Fatalf("--device cuda: exit %d\n%s\n%s", code, got, errs)
	}
	code, want, errs := runWithStdin([]string{"--device", "cpu", "--tp", "2", "-x", script}, "")
	if code != 0 {
		t.Fatalf("--device cpu: exit %d\n%s", code, errs)
	}
	if withoutDevices(got) != withoutDevices(want) {
		t.Errorf("lens on CUDA workers:\n%s\non the CPU:\n%s", got, want)
	}
}
