package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestReplHelperProcess is not a test: TestCtrlCAtStopAbandonsWorker runs
// the test binary with HSDB_REPL_HELPER=1 to get an `hsdb` REPL reading
// commands from its stdin (its workers are the test binary too, TestMain).
func TestReplHelperProcess(t *testing.T) {
	if os.Getenv("HSDB_REPL_HELPER") != "1" {
		t.Skip("helper process for TestCtrlCAtStopAbandonsWorker")
	}
	os.Exit(hsdbMain(strings.Fields(os.Getenv("HSDB_REPL_ARGS")), stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// startReplHelper starts hsdb's main (TestReplHelperProcess) in a child
// process with args, its stdin and stdout piped, stderr discarded; the
// child is killed when the test ends.
func startReplHelper(t *testing.T, args string) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReplHelperProcess$")
	cmd.Env = append(os.Environ(), "HSDB_REPL_HELPER=1", "HSDB_REPL_ARGS="+args)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stdin, stdout
}

// TestCtrlCAtStopAbandonsWorker: `hsdb --workers --tp 2` (each link mode)
// stopped at layers.2; `info ranks` shows both workers' pids; rank 1's is
// stopped with SIGSTOP, `print stream` waits on it, and one SIGINT to hsdb
// (Ctrl-C) names rank 1's worker and its wait at once; within seconds
// (not the 10-minute --worker-timeout) the print fails with rank 1's
// fault (the abandoned request, the worker ended), the worker is gone,
// and hsdb, reading a script from stdin, ends with status 130.
func TestCtrlCAtStopAbandonsWorker(t *testing.T) {
	for _, links := range []string{"direct", "hub"} {
		t.Run(links, func(t *testing.T) {
			cmd, stdin, stdout := startReplHelper(t, "--workers --tp 2 --worker-links "+links)
			var mu sync.Mutex
			var out strings.Builder
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					mu.Lock()
					out.WriteString(sc.Text() + "\n")
					mu.Unlock()
				}
			}()
			seen := func(re *regexp.Regexp, d time.Duration) []string {
				t.Helper()
				for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					mu.Lock()
					m := re.FindStringSubmatch(out.String())
					mu.Unlock()
					if m != nil {
						return m
					}
				}
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("no %s within %s in:\n%s", re, d, out.String())
				return nil
			}
			fmt.Fprintln(stdin, "input ids 1,2,3\nbreak layers.2\nrun\ninfo ranks")
			m := seen(regexp.MustCompile(`rank 1 .*\n  worker pid (\d+) on \S+: at a stop at model\.layers\.2\n`), 60*time.Second)
			pid, _ := strconv.Atoi(m[1])
			syscall.Kill(pid, syscall.SIGSTOP)
			defer syscall.Kill(pid, syscall.SIGKILL)
			for i := 0; i < 500 && !procState(pid, 'T'); i++ { // the stop takes effect when the worker is next scheduled
				time.Sleep(2 * time.Millisecond)
			}
			fmt.Fprintln(stdin, "print stream")
			time.Sleep(500 * time.Millisecond) // the print waits on rank 1 by then
			t0 := time.Now()
			cmd.Process.Signal(syscall.SIGINT)
			seen(regexp.MustCompile(fmt.Sprintf(`\^C: rank 1's worker \(pid %d on \S+\) has not answered for \d`, pid)), 5*time.Second)
			seen(regexp.MustCompile(fmt.Sprintf(`rank 1 \(pid %d on \S+\): had not answered the front's request for .* when Ctrl-C abandoned it.*ended \(killed\)`, pid)), 5*time.Second)
			if d := time.Since(t0); d > 4*time.Second {
				t.Errorf("the print failed %s after Ctrl-C, want about a second", d)
			}
			stdin.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
					t.Errorf("hsdb ended with %v, want status 130 (a script stopped by Ctrl-C)", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("hsdb did not end after the script")
			}
			if syscall.Kill(pid, 0) == nil {
				var ws syscall.WaitStatus
				if p, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); p != pid {
					t.Errorf("the abandoned worker %d still runs", pid)
				}
			}
		})
	}
}

// procState reports whether Linux shows process pid in state c (proc(5):
// the field after the command name in /proc/PID/stat).
func procState(pid int, c byte) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] == c
}
