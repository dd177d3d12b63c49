package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scriptWorker writes body as an executable shell script named
// hsdb-cuda-worker and names it in $HSDB_CUDA_WORKER.
func scriptWorker(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), cudaWorkerName)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cudaWorkerEnv, p)
	return p
}

// TestDeviceChoiceBrokenWorker: whatever answers to the CUDA worker's name
// (a program that hangs, one that leaves a child holding its output open,
// one that prints binary garbage or without end, one that sees 0 GPUs, a
// file that is not executable, a directory), the default device falls
// back to cpu within the probe's bound and `why` says what the probe saw,
// in printable text. Expectations are derived by hand from each script.
func TestDeviceChoiceBrokenWorker(t *testing.T) {
	old := probeTimeout
	probeTimeout = time.Second
	t.Cleanup(func() { probeTimeout = old })
	cases := []struct {
		name, body string
		want       string
	}{
		{"hangs", "exec sleep 60", "did not answer within 1s"},
		// sh forks sleep, which keeps the probe's output pipe open after
		// sh itself is killed: only killing the group (or WaitDelay) ends it.
		{"child holds output", "sleep 60; echo done", "did not answer within 1s"},
		{"garbage", `printf '\001\002\377\376 GPU'`, `answered "\x01\x02\xff\xfe GPU", not "N GPU(s), …"`},
		{"endless output", "yes 'no GPU here'", "did not answer within 1s"},
		{"zero GPUs", "echo '0 GPU(s), CUDA driver 13.0, driver API x'", "it sees no GPU (0 GPU(s)"},
		{"prints nothing", "exit 0", "printed nothing"},
		{"exits non-zero", "echo 'Error in initialization: NoDevice' >&2; exit 1", "its --probe failed (exit status 1): Error in initialization: NoDevice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := scriptWorker(t, c.body)
			start := time.Now()
			dc, err := (&modelFlags{}).chooseDevice()
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the probe took %v (bound %v)", d, probeTimeout)
			}
			if err != nil || dc.device != "cpu" || dc.workers || !strings.Contains(dc.why, "--device defaulted to cpu: "+p+" is not used: ") || !strings.Contains(dc.why, c.want) {
				t.Errorf("got %+v, %v; want cpu and %q", dc, err, c.want)
			}
			for _, r := range dc.why {
				if r < ' ' || r == 0xfffd {
					t.Fatalf("why holds an unprintable rune %q: %q", r, dc.why)
				}
			}
		})
	}
	t.Run("not executable", func(t *testing.T) {
		p := scriptWorker(t, "echo '1 GPU(s)'")
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		dc, err := (&modelFlags{}).chooseDevice()
		if err != nil || dc.device != "cpu" || !strings.Contains(dc.why, "it could not be started") {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), cudaWorkerName)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv(cudaWorkerEnv, p)
		dc, err := (&modelFlags{}).chooseDevice()
		if err != nil || dc.device != "cpu" || !strings.Contains(dc.why, "it could not be started") {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
	t.Run("directory on PATH", func(t *testing.T) {
		noCUDAWorker(t)
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, cudaWorkerName), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", dir)
		dc, err := (&modelFlags{}).chooseDevice()
		if err != nil || dc.device != "cpu" || !strings.Contains(dc.why, "no hsdb-cuda-worker next to hsdb or on PATH") {
			t.Errorf("got %+v, %v", dc, err)
		}
	})
}

// TestDefaultedCUDAWorkerFails: a worker whose probe sees a GPU but which
// then never joins ends the load with one error that names the defaulted
// choice and how to refuse it (--device cpu), instead of a bare rank error.
func TestDefaultedCUDAWorkerFails(t *testing.T) {
	p := scriptWorker(t, "echo '1 GPU(s), CUDA driver 13.0, driver API fake'")
	script := filepath.Join(t.TempDir(), "info.hsdb")
	if err := os.WriteFile(script, []byte("info model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runWithStdin([]string{"-x", script}, "")
	if code != 1 || !strings.Contains(errs, "rank 0: the worker exited before joining") ||
		!strings.Contains(errs, "--device defaulted to cuda: "+p+" sees 1 GPU(s)") || !strings.Contains(errs, "--device cpu runs on the CPU") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runWithStdin([]string{"--device", "cpu", "-x", script}, "")
	if code != 0 || !strings.Contains(out, "device choice      --device cpu") {
		t.Errorf("--device cpu: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestHungProbeNoted: a CUDA worker whose probe hangs makes the start
// wait probeTimeout and fall back to cpu; a script (no banner) is told so
// on stderr, once, and runs on the CPU.
func TestHungProbeNoted(t *testing.T) {
	old := probeTimeout
	probeTimeout = time.Second
	t.Cleanup(func() { probeTimeout = old })
	p := scriptWorker(t, "exec sleep 60")
	script := filepath.Join(t.TempDir(), "info.hsdb")
	if err := os.WriteFile(script, []byte("info model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runWithStdin([]string{"-x", script}, "")
	note := "hsdb: note: --device defaulted to cpu: " + p + " is not used: its --probe did not answer within 1s and was killed\n"
	if code != 0 || strings.Count(errs, note) != 1 || !strings.Contains(out, "device choice      --device defaulted to cpu") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}
