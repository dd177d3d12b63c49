package worker

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hsdb/engine"
)

// TestSpawnFailureEndsStartedRanks: when the worker of a later slot (2 of
// 4: --tp 2 --pp 2) cannot be started, the workers of slots 0 and 1,
// already running, are killed and reaped before Start returns its error:
// no such process remains (not even a zombie). Fails when Start returns
// at once, leaving them orphaned.
func TestSpawnFailureEndsStartedRanks(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs Linux's /proc")
	}
	var mu sync.Mutex
	var pids []int
	var tried []string
	startCmd = func(cmd *exec.Cmd) error {
		rank := cmd.Args[len(cmd.Args)-1] // spawn appends --rank N last
		mu.Lock()
		defer mu.Unlock()
		tried = append(tried, rank)
		if rank == "2" {
			return errors.New("no more processes (test)")
		}
		err := cmd.Start()
		if err == nil {
			pids = append(pids, cmd.Process.Pid)
		}
		return err
	}
	defer func() { startCmd = (*exec.Cmd).Start }()
	_, err := Start("../../testdata/hf/llama", engine.Options{TP: 2}, Config{Spawn: true, PP: 2, Timeout: time.Minute,
		Command: []string{"/bin/sh", "-c", "exec sleep 600"}})
	if err == nil || !strings.Contains(err.Error(), "starting rank 2's worker") || !strings.Contains(err.Error(), "no more processes (test)") {
		t.Fatalf("Start whose slot 2 cannot be started: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(tried, []string{"0", "1", "2"}) || len(pids) != 2 {
		t.Fatalf("started slots %v (pids %v), want 0 and 1 started and 2 tried", tried, pids)
	}
	for _, pid := range pids {
		if s := procState(pid); s != 0 {
			t.Errorf("the worker of an earlier slot (pid %d) remains in state %c after Start failed", pid, s)
			killLeftover(pid)
		}
	}
}
