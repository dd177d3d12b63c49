package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
)

// TestWorkerStderrQuoted: a worker that writes raw bytes (here \x01, \x1b
// and an invalid UTF-8 byte before dying) has them quoted in the front's
// log and in the fault report, never passed to the terminal as they are
// (newuser2 finding B).
func TestWorkerStderrQuoted(t *testing.T) {
	var log strings.Builder
	cfg := Config{Spawn: true, Timeout: 10 * time.Second, Log: &syncWriter{b: &log},
		Command: []string{"/bin/sh", "-c", `printf 'bad \001\033[2J\377 bytes\n' >&2; exit 3`}}
	_, err := Start("../../testdata/hf/llama", engine.Options{TP: 1}, cfg)
	if err == nil {
		t.Fatal("Start with a worker that exits at once succeeded")
	}
	for what, s := range map[string]string{"error": err.Error(), "log": log.String()} {
		if strings.ContainsAny(s, "\x01\x1b\xff") {
			t.Errorf("the %s holds raw bytes the worker wrote: %q", what, s)
		}
	}
	if want := `"bad \x01\x1b[2J\xff bytes"`; !strings.Contains(log.String(), want) {
		t.Errorf("the front's log does not quote the line as %s:\n%s", want, log.String())
	}
}

// testFrontEnv makes the test binary a front (runTestFront) for
// TestWorkerEndsWithFront; its value is the directory to work in.
const testFrontEnv = "HSDB_TEST_FRONT"

// runTestFront spawns one worker that writes its pid to DIR/worker.pid
// and then waits (it never joins), stops it with SIGSTOP, writes
// DIR/stopped and exits at once, as hsdb does on a second Ctrl-C.
func runTestFront(dir string) {
	pidFile := filepath.Join(dir, "worker.pid")
	go Start("../../testdata/hf/llama", engine.Options{TP: 1}, Config{Spawn: true, Timeout: time.Minute,
		Command: []string{"/bin/sh", "-c", `echo $$ > '` + pidFile + `.tmp' && mv '` + pidFile + `.tmp' '` + pidFile + `' && exec sleep 600`}})
	for i := 0; i < 500; i++ {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGSTOP)
				os.WriteFile(filepath.Join(dir, "stopped"), nil, 0o644)
				os.Exit(0)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Exit(2)
}

// TestWorkerEndsWithFront: a worker stopped with SIGSTOP is not stranded
// when its front exits at once (newuser2 finding E): Linux's parent-death
// signal (SIGKILL) ends it. Gone means no such process or a zombie left
// for init to reap.
func TestWorkerEndsWithFront(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), testFrontEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the test front: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "stopped")); err != nil {
		t.Fatalf("the test front did not stop its worker: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "worker.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return // gone
		}
		// /proc/PID/stat: "pid (comm) S ...": the state follows the last ')'.
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 && s[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("worker %d still alive 10 s after its front exited: %s", pid, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
