package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJSONCtrlCWhileStdinWaits: `hsdb --json` reading commands from a pipe
// that sends no more: one Ctrl-C ends it with status 130, and its stdout
// holds JSON objects alone, one a line, the last the interrupt as a
// failure ({"command": "stdin", "error": ...}). hsdb went on waiting in
// read(2) after "^C: stopping the script", a line of text written to
// stdout among the JSON objects, and the interrupt itself went to stderr
// as text.
func TestJSONCtrlCWhileStdinWaits(t *testing.T) {
	cmd, stdin, stdout := startReplHelper(t, "--json")
	defer stdin.Close()
	if _, err := stdin.Write([]byte("input ids 1,2\n")); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("no first line: %v", sc.Err())
	}
	lines := []string{sc.Text()}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		done <- cmd.Wait()
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("Ctrl-C while hsdb waited for its next line on stdin did not end it; stdout:\n%s", strings.Join(lines, "\n"))
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130", err)
	}
	var last map[string]any
	for i, l := range lines {
		last = nil
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Fatalf("stdout line %d is not a JSON object: %q (%v)\n%s", i+1, l, err, strings.Join(lines, "\n"))
		}
	}
	if e, _ := last["error"].(string); last["command"] != "stdin" || !strings.Contains(e, "interrupted") {
		t.Fatalf("last object %v, want the interrupt as the failure of stdin", last)
	}
}
