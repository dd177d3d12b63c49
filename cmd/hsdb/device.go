package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hsdb/engine"
	"hsdb/engine/worker"
)

// cudaWorkerName is the CUDA worker's binary (cmd/hsdb-cuda-worker, built
// with -tags cuda,cu over gorgonia.org/cu).
const cudaWorkerName = "hsdb-cuda-worker"

// cudaWorkerEnv names the CUDA worker binary explicitly (tests; a worker
// installed elsewhere); it is looked for before the default places.
const cudaWorkerEnv = "HSDB_CUDA_WORKER"

// findCUDAWorker returns the CUDA worker's path: $HSDB_CUDA_WORKER, else
// hsdb-cuda-worker next to this executable, else on PATH; "" when none
// is found.
func findCUDAWorker() string {
	if p := os.Getenv(cudaWorkerEnv); p != "" {
		return p
	}
	if exe, err := executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), cudaWorkerName); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath(cudaWorkerName); err == nil {
		return p
	}
	return ""
}

// executable is os.Executable (tests stand in another).
var executable = os.Executable

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// probeTimeout bounds `hsdb-cuda-worker --probe` (cuInit and a device
// count take well under a second; a wedged driver must not hang hsdb). A
// variable for tests.
var probeTimeout = 20 * time.Second

// errProbeTimeout marks a probe that did not answer within probeTimeout.
var errProbeTimeout = errors.New("did not answer")

// probeOutputLimit bounds what a probe's output is kept of: the real
// worker writes one short line; anything else on PATH under the worker's
// name may write without end.
const probeOutputLimit = 4096

// probeLine is the real worker's answer: "N GPU(s), CUDA driver X.Y,
// driver API NAME" (cmd/hsdb-cuda-worker, --probe).
var probeLine = regexp.MustCompile(`^([0-9]+) GPU\(s\)(, .*)?$`)

// limitedBuffer keeps the first n bytes written to it and discards the
// rest, reporting every write as complete so the child never blocks.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.n - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// probeCUDAWorker runs `PATH --probe` in its own process group: its one
// line ("1 GPU(s), CUDA driver 13.0, driver API gorgonia.org/cu") when it
// sees at least one GPU, else an error saying what happened: it could not
// be started, it did not answer within probeTimeout (the whole group is
// killed then, so a child holding its output open cannot hang hsdb), it
// exited non-zero (with the first line it wrote: cu's init reports a
// missing GPU and exits 1), or it answered something other than the
// worker's probe line (another program under the worker's name, or no
// GPU).
func probeCUDAWorker(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	out := &limitedBuffer{n: probeOutputLimit}
	cmd := exec.CommandContext(ctx, path, "--probe")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	line = strings.TrimSpace(line)
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("its --probe %w within %v and was killed", errProbeTimeout, probeTimeout)
	case err != nil && cmd.Process == nil:
		return "", fmt.Errorf("it could not be started: %v", err)
	case err != nil:
		if line == "" {
			return "", fmt.Errorf("its --probe failed: %v", err)
		}
		return "", fmt.Errorf("its --probe failed (%v): %s", err, worker.Printable(line))
	}
	m := probeLine.FindStringSubmatch(line)
	if m == nil {
		if line == "" {
			return "", errors.New("its --probe printed nothing (not hsdb's CUDA worker?)")
		}
		return "", fmt.Errorf("its --probe answered %s, not \"N GPU(s), …\" (not hsdb's CUDA worker?)", worker.Printable(line))
	}
	if n, err := strconv.Atoi(m[1]); err != nil || n < 1 {
		return "", fmt.Errorf("it sees no GPU (%s)", line)
	}
	return line, nil
}

// deviceChoice is where a session's ranks run: the device, whether in
// worker processes and with which command, and why (for the banner and
// `info model`).
type deviceChoice struct {
	device  string
	workers bool
	command []string // the worker command, nil: this binary's `hsdb worker`
	why     string
	// note is said on stderr at load, where the banner is not shown
	// (scripts, subcommands): the CUDA worker's probe hung, so the start
	// took probeTimeout longer and the device fell back to cpu.
	note string
}

// chooseDevice decides --device and the worker processes:
//
//   - no --device: cuda when the CUDA worker is installed (next to hsdb or
//     on PATH) and sees a GPU, one worker process per rank; else cpu;
//   - --device cuda: one CUDA worker per rank (--worker-bin, else the
//     installed CUDA worker); in process with --workers=false or when no
//     CUDA worker is installed and this hsdb was built with -tags cuda;
//   - --device cpu: in process, or hsdb worker processes with --workers.
func (m *modelFlags) chooseDevice() (deviceChoice, error) {
	inProcess := m.workers.set && !m.workers.v
	custom := func() []string {
		if m.workerBin != "" {
			return []string{m.workerBin, "worker"}
		}
		return nil
	}
	switch m.device {
	case "":
		path := findCUDAWorker()
		switch {
		case inProcess:
			return deviceChoice{device: "cpu", why: "--device defaulted to cpu (--workers=false: CUDA ranks run in hsdb-cuda-worker processes)"}, nil
		case m.workerBin != "":
			return deviceChoice{device: "cpu", workers: m.workers.v, command: custom(), why: "--device defaulted to cpu (--worker-bin given)"}, nil
		case path == "":
			return deviceChoice{device: "cpu", workers: m.workers.v, why: "--device defaulted to cpu: no " + cudaWorkerName + " next to hsdb or on PATH"}, nil
		}
		line, err := probeCUDAWorker(path)
		if err != nil {
			dc := deviceChoice{device: "cpu", workers: m.workers.v, why: fmt.Sprintf("--device defaulted to cpu: %s is not used: %v", path, err)}
			if errors.Is(err, errProbeTimeout) {
				dc.note = dc.why
			}
			return dc, nil
		}
		return deviceChoice{device: "cuda", workers: true, command: []string{path},
			why: fmt.Sprintf("--device defaulted to cuda: %s sees %s; one worker process per rank", path, line)}, nil
	case "cpu":
		return deviceChoice{device: "cpu", workers: m.workers.v, command: custom(), why: "--device cpu"}, nil
	case "cuda":
		if inProcess {
			if !engine.CUDABuiltIn() {
				return deviceChoice{}, fmt.Errorf("--device cuda --workers=false: this hsdb was built without -tags cuda, so CUDA ranks run only in %s processes (drop --workers=false)", cudaWorkerName)
			}
			return deviceChoice{device: "cuda", why: "--device cuda, in process (--workers=false; driver API: libcuda via dlopen)"}, nil
		}
		if m.workerBin != "" {
			return deviceChoice{device: "cuda", workers: true, command: custom(), why: "--device cuda, one worker process per rank (--worker-bin " + m.workerBin + ")"}, nil
		}
		if path := findCUDAWorker(); path != "" {
			return deviceChoice{device: "cuda", workers: true, command: []string{path}, why: "--device cuda, one " + path + " process per rank"}, nil
		}
		if m.workers.v || m.listen != "" {
			return deviceChoice{device: "cuda", workers: m.workers.v, why: "--device cuda, ranks in hsdb worker processes of this binary (no " + cudaWorkerName + " found)"}, nil
		}
		if engine.CUDABuiltIn() {
			return deviceChoice{device: "cuda", why: "--device cuda, in process: no " + cudaWorkerName + " next to hsdb or on PATH (a fault in a kernel ends the session)"}, nil
		}
		return deviceChoice{}, fmt.Errorf("%w: --device cuda: no %s next to hsdb or on PATH, and this hsdb was built without -tags cuda (README, GPUs: scripts/install.sh installs it beside hsdb, or go install ./cmd/hsdb && go install -tags cuda,cu ./cmd/hsdb-cuda-worker)", engine.ErrDevice, cudaWorkerName)
	}
	return deviceChoice{}, fmt.Errorf("--device %q: want cpu or cuda", m.device)
}
