package main

import (
	"fmt"
	goio "io"
	"os"
	"time"

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
// bad flags.
func runWorker(args []string, io stdio) int {
	fs := newFlagSet("worker", io)
	connect := fs.String("connect", "", "the front's address HOST:PORT (its --listen, printed when it starts)")
	token := fs.String("token", "", "the session token the front printed (default $"+worker.TokenEnv+")")
	rank := fs.Int("rank", -1, "the slot to run: stage × --tp + rank (-1: the next free one)")
	dial := fs.Duration("dial-timeout", 30*time.Second, "how long to try to reach the front")
	if done, code := parseArgs(fs, args, io, workerUsage); done {
		return code
	}
	if *connect == "" || fs.NArg() > 0 {
		fmt.Fprintln(io.Err, "hsdb worker: usage: hsdb worker --connect HOST:PORT [--token T] [--rank R]")
		return 2
	}
	if *rank < -1 {
		fmt.Fprintf(io.Err, "hsdb worker: --rank %d: want a rank >= 0\n", *rank)
		return 2
	}
	if *token == "" {
		*token = os.Getenv(worker.TokenEnv)
	}
	if err := worker.Serve(worker.WorkerConfig{Connect: *connect, Token: *token, Rank: *rank, Dial: *dial, Log: workerLog(io)}); err != nil {
		fmt.Fprintln(io.Err, "hsdb worker:", err)
		return 1
	}
	return 0
}

// workerLog is where a worker notes its rank: stderr, unless a front
// started it (the front then speaks for it).
func workerLog(io stdio) goio.Writer {
	if worker.Spawned() {
		return nil
	}
	return io.Err
}
