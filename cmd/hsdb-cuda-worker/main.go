//go:build cuda && cu

// Command hsdb-cuda-worker runs one CUDA rank of an hsdb session in its own
// process, over gorgonia.org/cu (the driver API: contexts, memory,
// modules, launches, streams, events); cuBLAS and NCCL are opened with
// dlopen as in every cuda build. A front (hsdb --device cuda) finds it
// next to its own executable or on PATH and starts one per GPU rank; a
// launcher can start it by hand as `hsdb-cuda-worker --connect HOST:PORT
// --token T [--rank R]`, exactly as `hsdb worker`.
//
// It is the only binary built with the cu tag: cu links -lcuda and its
// package init calls cuInit and exits the process when there is no GPU,
// harmless in a process that only exists where a GPU is wanted. Build and
// install it with the front end (README, GPUs: scripts/install.sh does both):
//
//	go install -tags cuda,cu ./cmd/hsdb-cuda-worker
//
// Linking needs libcuda.so (the driver's, or the CUDA toolkit's stub that
// scripts/setup-cuda.sh installs); running needs the NVIDIA driver.
//
// --probe prints the GPUs it sees and exits 0, or exits non-zero (cu's
// init prints why): the front's test for defaulting --device to cuda.
// Exit status otherwise: 0 when the front ended the session, 1 on a
// refusal or a failure, 2 for bad flags, 3 when the GPU's context was lost
// (a kernel fault: the front starts a fresh worker on the next run).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/worker"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("hsdb-cuda-worker", flag.ContinueOnError)
	probe := fs.Bool("probe", false, "print the GPUs this worker sees and exit (status 0 when there is at least one)")
	var wf worker.Flags
	wf.Register(fs)
	if len(args) > 0 && args[0] == "worker" { // started as `BIN worker …` (hsdb --worker-bin)
		args = args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *probe {
		n, err := driver.DeviceCount()
		if err != nil {
			fmt.Fprintln(os.Stderr, "hsdb-cuda-worker:", err)
			return 1
		}
		v, _ := driver.DriverVersion()
		fmt.Printf("%d GPU(s), CUDA driver %d.%d, driver API %s\n", n, v/1000, v%1000/10, driver.DriverAPI)
		return 0
	}
	cfg, err := wf.Config(fs.Args(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hsdb-cuda-worker:", err)
		if errors.Is(err, worker.ErrUsage) {
			return 2
		}
		return 1
	}
	if err := worker.Serve(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "hsdb-cuda-worker:", err)
		return 1
	}
	return 0
}
