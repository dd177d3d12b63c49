package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJSONRunSaysWorkerReplaced: `hsdb --workers --tp 2 --json` reading a
// script from stdin; after a first `run`, `info ranks` gives rank 1's
// worker pid, the test SIGKILLs that worker, and the next `run`'s JSON
// result carries a note naming rank 1, the killed pid and that a fresh
// worker replaced it (the front's stderr line alone never reaches --json
// output); the first run's result has no notes and both give the same
// next token.
func TestJSONRunSaysWorkerReplaced(t *testing.T) {
	cmd, stdin, stdout := startReplHelper(t, "--workers --tp 2 --json")
	type line struct {
		Command string          `json:"command"`
		Error   string          `json:"error"`
		Result  json.RawMessage `json:"result"`
	}
	lines := make(chan line, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				l.Error = fmt.Sprintf("not JSON (%v): %s", err, sc.Text())
			}
			lines <- l
		}
	}()
	next := func(command string) json.RawMessage {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || l.Command != command || l.Error != "" {
				t.Fatalf("got %+v (open %v), want the result of %q", l, ok, command)
			}
			return l.Result
		case <-time.After(60 * time.Second):
			t.Fatalf("no result of %q within a minute", command)
		}
		return nil
	}
	type done struct { // client.Done, the result of a run that ends
		Next  []int32  `json:"next"`
		Notes []string `json:"notes"`
	}
	fmt.Fprintln(stdin, "input ids 1,2,3\nrun\ninfo ranks")
	next("input ids 1,2,3")
	var first, again done
	if err := json.Unmarshal(next("run"), &first); err != nil {
		t.Fatal(err)
	}
	var ranks []struct {
		Rank    int `json:"rank"`
		Workers []struct {
			PID int `json:"pid"`
		} `json:"workers"`
	}
	if err := json.Unmarshal(next("info ranks"), &ranks); err != nil || len(ranks) != 2 || len(ranks[1].Workers) != 1 {
		t.Fatalf("info ranks: %+v %v", ranks, err)
	}
	pid := ranks[1].Workers[0].PID
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 200 && !procState(pid, 'Z') && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintln(stdin, "run")
	if err := json.Unmarshal(next("run"), &again); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	want := fmt.Sprintf("rank 1's worker was replaced by a fresh one when this pass began; it was ended: rank worker failed: rank 1 (pid %d on ", pid)
	if n := again.Notes; len(n) != 1 || !strings.HasPrefix(n[0], want) {
		t.Errorf("the second run's notes %q, want one starting %q", n, want)
	}
	if len(first.Notes) != 0 || len(first.Next) != 1 || fmt.Sprint(again.Next) != fmt.Sprint(first.Next) {
		t.Errorf("first run: notes %q, next %v; second run next %v", first.Notes, first.Next, again.Next)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("hsdb ended with %v", err)
	}
}
