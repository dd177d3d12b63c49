package worker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hsdb/engine"
)

// TestSpawnedWrapperNotStranded: a --worker-bin that is a wrapper script
// (setting up an environment, then starting the real worker as its
// child) whose worker never joins must not leave processes behind when
// the front gives up on it: the wrapper's child, here a `sleep` standing
// in for the worker, must be gone within seconds of Start's error, while
// the front (this test) still runs. Fails when only the wrapper is killed
// (or nothing is: the join timeout left spawned workers running).
func TestSpawnedWrapperNotStranded(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs Linux's /proc")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := filepath.Join(dir, "wrapper.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 1000 &\necho $! > "+pidFile+"\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(engine.DefaultModelPath, engine.Options{TP: 1}, Config{Spawn: true, Command: []string{script}, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "did not join") {
		t.Fatalf("Start with a worker that never joins: %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(5 * time.Second)
	for !procGone(pid) && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	if !procGone(pid) {
		t.Errorf("the wrapper's child (pid %d) still runs after the front gave up on the worker", pid)
		killLeftover(pid)
	}
}

// killLeftover ends a process the test left behind.
func killLeftover(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
