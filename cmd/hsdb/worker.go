package main

import (
	"errors"
	"fmt"

	"hsdb/engine/worker"
)

func init() {
	register(&subcommand{name: "worker", usage: workerUsage,
		summary: "run one rank of a session started with --workers or --listen (its launcher starts one per rank)", run: runWorker})
}

// workerUsage is `hsdb worker`'s synopsis.
const workerUsage = "worker --connect HOST:PORT [--token T] [--rank R] [--dial-timeout D]"

// runWorker is `hsdb worker`: it joins the front at --connect with the
// session token (--token, else $HSDB_WORKER_TOKEN), loads the rank it is
// assigned and serves the session until the front ends it. Exit status:
// 0 when the front ended the session, 1 on a refusal or a failure, 2 for
// bad flags. cmd/hsdb-cuda-worker is the same over gorgonia.org/cu.
func runWorker(args []string, io stdio) int {
	fs := newFlagSet("worker")
	var wf worker.Flags
	wf.Register(fs)
	if done, code := parseArgs(fs, args, io, workerUsage); done {
		return code
	}
	cfg, err := wf.Config(fs.Args(), io.Err)
	if err != nil {
		fmt.Fprintln(io.Err, "hsdb worker:", err)
		if errors.Is(err, worker.ErrUsage) {
			return 2
		}
		return 1
	}
	if err := worker.Serve(cfg); err != nil {
		fmt.Fprintln(io.Err, "hsdb worker:", err)
		return 1
	}
	return 0
}
