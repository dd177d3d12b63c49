package worker

import (
	"os"
	"testing"
	"time"

	"hsdb/engine"
)

// TestJoinTimeoutBoundsTheStart: a spawned worker that takes 1.5 s to
// start (a wrapper sleeping before it execs the worker) joins a front whose
// step Timeout is 1 s when JoinTimeout allows a minute; with the step
// Timeout bounding the join it was refused ("did not join ... within 1s"),
// the failure TestWorkerHungIsKilled (inspect/debug) hit on a loaded host.
func TestJoinTimeoutBoundsTheStart(t *testing.T) {
	t.Setenv(testWorkerEnv, "1")
	cfg := Config{Spawn: true, Timeout: time.Second, JoinTimeout: time.Minute,
		Command: []string{"/bin/sh", "-c", `sleep 1.5; exec "$0" "$@"`, os.Args[0]}}
	f, err := Start("../../testdata/hf/llama", engine.Options{TP: 1}, cfg)
	if err != nil {
		t.Fatalf("Start with a worker that joins after 1.5 s and JoinTimeout 1m: %v", err)
	}
	f.Close()
}
