package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hsdb/inspect/capture"
)

// TestCaptureSecondSignalQuits: an `hsdb capture` whose job cannot reach
// its next site (the helper's job blocks after 8 batches, as a job waiting
// on a stopped rank worker does) does not end on the first SIGTERM; it
// says, after quitWait (2s), that a second signal quits, and the second
// ends it with status 130, naming OUT.partial, which keeps the 8 or more
// sequences journaled before the pause and resumes.
func TestCaptureSecondSignalQuits(t *testing.T) {
	data := writeJSONL(t, 24)
	out := filepath.Join(t.TempDir(), "dump")
	args := []string{"capture", "--layers", "1,3", "--data", data, "--out", out, "--max-batch-tokens", "40"}
	cmd, stderr := startCaptureHelper(t, args)
	defer cmd.Process.Kill()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	wait := func(prefix string, d time.Duration) string {
		t.Helper()
		deadline := time.After(d)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stderr ended before %q", prefix)
				}
				if i := strings.Index(l, prefix); i >= 0 {
					return l[i:]
				}
			case <-deadline:
				t.Fatalf("no %q within %v", prefix, d)
			}
		}
	}
	var done int
	fmt.Sscanf(wait("HSDB-TEST-PAUSED", 60*time.Second), "HSDB-TEST-PAUSED %d", &done)
	cmd.Process.Signal(syscall.SIGTERM)
	wait("hsdb capture: terminated: the job has not stopped yet", 10*time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	want := "hsdb capture: quitting now; " + out + capture.PartialSuffix + " keeps the sequences validated so far"
	wait(want, 10*time.Second)
	err := cmd.Wait()
	if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130", err)
	}
	m, err := capture.ReadManifest(out + capture.PartialSuffix)
	if err != nil || len(m.Sequences) < 8 || done < 8 {
		t.Fatalf("staging manifest: %v sequences, %v (paused after %d)", len(m.Sequences), err, done)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a quit job left %s: %v", out, err)
	}
	code, stdout, errs := runWithStdin(args, "")
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("(%d skipped, already validated)", len(m.Sequences))) {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errs)
	}
}
