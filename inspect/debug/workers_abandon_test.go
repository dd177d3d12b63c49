package debug

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/worker"
	"hsdb/inspect/client"
)

// syncWriter is a log many goroutines write to.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// linkModes runs f once over direct links between the workers and once
// through the front's hub (--worker-links direct|hub).
func linkModes(t *testing.T, f func(t *testing.T, hub bool)) {
	for _, hub := range []bool{false, true} {
		name := "direct"
		if hub {
			name = "hub"
		}
		t.Run(name, func(t *testing.T) { f(t, hub) })
	}
}

// gone reports whether process pid has ended (no such process, or a
// zombie the front has yet to reap: it is the front's child, so this test
// never reaps it), waiting up to 2 s.
func gone(pid int) bool {
	for range 200 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := bytes.LastIndexByte(b, ')'); err != nil || i > 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// sigstop stops process pid and waits until Linux shows it stopped (state
// T in /proc/PID/stat, proc(5)): a signal takes effect when the process is
// next scheduled, and a worker running on another core may answer the
// front once more before that.
func sigstop(t *testing.T, pid int) {
	t.Helper()
	if !stopProcess(pid) {
		t.Fatalf("worker %d is not stopped a second after SIGSTOP", pid)
	}
}

// stopProcess sends pid SIGSTOP and waits, up to a second, until Linux
// shows it stopped (state T); it reports whether it did. SIGSTOP takes
// effect only when the thread the kernel picked to take it runs: on a
// loaded machine that thread can wait for a CPU for milliseconds while
// the worker's other threads go on, so a worker sent SIGSTOP mid-pass
// could still finish the pass (the cause of this package's rare failures
// of TestCtrlCEndsWorkerStoppedMidPass, /proc showing the worker
// running 2 ms after the signal).
func stopProcess(pid int) bool {
	syscall.Kill(pid, syscall.SIGSTOP)
	for range 500 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// stopTimed runs f and fails the test when it takes longer than limit (the
// front's own timeout in these tests is a minute: a wait that only the
// timeout ends shows as a failure here, long before it).
func stopTimed[T any](t *testing.T, limit time.Duration, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f()
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(limit):
		t.Fatalf("%s still waits after %s", what, limit)
	}
	panic("unreachable")
}

// TestCtrlCAbandonsStoppedWorker: at a stop, rank 1's worker is stopped
// (SIGSTOP) and `print stream` waits for its statistics; Ctrl-C (Abandon)
// names rank 1 at once, and a second later the worker is ended: the print
// fails with a report naming rank 1, its pid and the abandoned request,
// long before the front's one-minute timeout. The session keeps its
// breakpoint; `info ranks` marks rank 1 failed; `run` starts a fresh
// worker and stops with the numbers of an in-process session.
func TestCtrlCAbandonsStoppedWorker(t *testing.T) {
	linkModes(t, func(t *testing.T, hub bool) {
		s, f := workerSessionConfig(t, 2, worker.Config{Timeout: time.Minute, Hub: hub})
		l := NewLocal(s)
		if _, err := l.Break("layers.2", "", false); err != nil {
			t.Fatal(err)
		}
		o, err := l.Run()
		mustStop(t, o, err, "model.layers.2")
		pid := f.PID(1)
		sigstop(t, pid)
		defer syscall.Kill(pid, syscall.SIGKILL)
		lines := make(chan []string, 1)
		go func() {
			time.Sleep(300 * time.Millisecond) // the print is waiting by then
			lines <- l.Abandon()
		}()
		_, err = stopTimed(t, 10*time.Second, "print stream after Ctrl-C", func() (*client.TensorReport, error) { return l.Print("stream", client.All) })
		if !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) ||
			!strings.Contains(err.Error(), "Ctrl-C abandoned") {
			t.Fatalf("print after Ctrl-C: %v; want the fault of rank 1 (pid %d) naming the abandoned request", err, pid)
		}
		if ls := <-lines; len(ls) != 1 || !strings.HasPrefix(ls[0], fmt.Sprintf("rank 1's worker (pid %d", pid)) || !strings.Contains(ls[0], "has not answered for") {
			t.Errorf("Ctrl-C's lines %q: want one naming rank 1's worker and its wait", ls)
		}
		if !gone(pid) {
			t.Errorf("the abandoned worker %d still runs", pid)
		}
		bps, _ := l.Breakpoints()
		if len(bps) != 1 || bps[0].Pattern != "layers.2" {
			t.Errorf("breakpoints after the fault: %+v", bps)
		}
		ri, _ := l.RankInfos()
		if len(ri) != 2 || len(ri[1].Workers) != 1 || ri[1].Workers[0].State != "failed" || !strings.Contains(ri[1].Workers[0].Reason, "Ctrl-C") {
			t.Errorf("info ranks after the fault: %+v; want rank 1's worker failed", ri)
		}
		if l.Abandon() != nil {
			t.Errorf("Ctrl-C with no request outstanding abandons something")
		}
		o, err = l.Run()
		mustStop(t, o, err, "model.layers.2")
		if f.PID(1) == pid {
			t.Errorf("rank 1 still has the abandoned worker's pid %d", pid)
		}
		streamAsInProcess(t, l, "model.layers.2", "through fresh workers")
	})
}

// TestCtrlCEndsWorkerStoppedMidPass: rank 1's worker is stopped (SIGSTOP)
// while the pass runs, and Ctrl-C comes: rank 0 stops waiting for it, and
// the worker, which does not report where it is, is ended within about a
// second; the pass fails naming rank 1 and Ctrl-C, not after the front's
// one-minute timeout, and the next run completes.
func TestCtrlCEndsWorkerStoppedMidPass(t *testing.T) {
	linkModes(t, func(t *testing.T, hub bool) {
		s, f := workerSessionConfig(t, 2, worker.Config{Timeout: time.Minute, Hub: hub})
		l := NewLocal(s)
		pid := f.PID(1)
		defer syscall.Kill(pid, syscall.SIGKILL)
		s.Observers = append(s.Observers, &killAt{site: "model.layers.1", do: func() {
			if !stopProcess(pid) { // before the front answers: the worker cannot go on past this site
				t.Errorf("worker %d is not stopped a second after SIGSTOP", pid)
			}
			go func() {
				time.Sleep(200 * time.Millisecond)
				s.Interrupt()
			}()
		}})
		_, err := stopTimed(t, 10*time.Second, "a run interrupted with a stopped worker", l.Run)
		if !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "did not answer Ctrl-C") {
			t.Fatalf("run: %v; want rank 1's worker ended for not answering Ctrl-C", err)
		}
		if !gone(pid) {
			t.Errorf("the stopped worker %d still runs", pid)
		}
		runToEndWithout(t, s, l, "the fault")
	})
}

// TestInfoRanksShowsWorkers: `info ranks` at a stop shows each rank's
// worker with the pid the test started it under, its host and where it
// is; a worker stopped by SIGSTOP is shown stopped and one killed by
// SIGKILL failed with its rank and exit, each at once (no wait on the
// worker).
func TestInfoRanksShowsWorkers(t *testing.T) {
	s, f := workerSession(t, 2)
	l := NewLocal(s)
	if _, err := l.Break("layers.1", "", false); err != nil {
		t.Fatal(err)
	}
	ri, _ := l.RankInfos()
	for r := range 2 {
		if len(ri[r].Workers) != 1 || ri[r].Workers[0].PID != f.PID(r) || ri[r].Workers[0].State != "idle" || ri[r].Workers[0].Host == "" {
			t.Errorf("rank %d before a run: %+v; want its worker, pid %d, idle", r, ri[r].Workers, f.PID(r))
		}
	}
	o, err := l.Run()
	mustStop(t, o, err, "model.layers.1")
	ri, _ = l.RankInfos()
	for r := range 2 {
		if w := ri[r].Workers; len(w) != 1 || w[0].State != "at a stop" || w[0].Site != "model.layers.1" {
			t.Errorf("rank %d at the stop: %+v; want at a stop at model.layers.1", r, w)
		}
	}
	pid0, pid1 := f.PID(0), f.PID(1)
	sigstop(t, pid0)
	defer syscall.Kill(pid0, syscall.SIGKILL)
	syscall.Kill(pid1, syscall.SIGKILL)
	if !gone(pid1) {
		t.Fatalf("worker %d survived SIGKILL", pid1)
	}
	ri, _ = stopTimed(t, 5*time.Second, "info ranks with a stopped and a killed worker", l.RankInfos)
	if w := ri[0].Workers; len(w) != 1 || w[0].State != "stopped by a signal" || w[0].PID != pid0 {
		t.Errorf("rank 0 after SIGSTOP: %+v; want stopped by a signal, pid %d", w, pid0)
	}
	if w := ri[1].Workers; len(w) != 1 || w[0].State != "failed" || w[0].PID != pid1 ||
		!strings.Contains(w[0].Reason, fmt.Sprintf("rank 1 (pid %d", pid1)) || !strings.Contains(w[0].Reason, "signal: killed") {
		t.Errorf("rank 1 after SIGKILL: %+v; want failed, naming rank 1, pid %d and the signal", w, pid1)
	}
}

// TestRunReplacesHungWorkerSaysSo: at a stop, rank 1's worker is stopped
// (SIGSTOP); `run` ends it after the front's timeout (2 s here) and starts
// a fresh one, and the session says so: the log names rank 1, that its
// worker was ended and why (it stopped answering), and that a fresh one
// starts.
func TestRunReplacesHungWorkerSaysSo(t *testing.T) {
	var log syncWriter
	s, f := workerSessionConfig(t, 2, worker.Config{Timeout: 2 * time.Second, Log: &log})
	l := NewLocal(s)
	if _, err := l.Break("layers.1", "", false); err != nil {
		t.Fatal(err)
	}
	o, err := l.Run()
	mustStop(t, o, err, "model.layers.1")
	pid := f.PID(1)
	sigstop(t, pid)
	defer syscall.Kill(pid, syscall.SIGKILL)
	o, err = l.Run()
	mustStop(t, o, err, "model.layers.1")
	if f.PID(1) == pid {
		t.Fatalf("rank 1 still has the stopped worker's pid %d", pid)
	}
	got := log.String()
	want := fmt.Sprintf("hsdb: rank 1's worker was ended: %v: rank 1 (pid %d on ", engine.ErrWorker, pid)
	if !strings.Contains(got, want) || !strings.Contains(got, "stopped answering for 2s") || !strings.Contains(got, "; starting a fresh one") {
		t.Errorf("the log:\n%s\nwant a line %q... naming why (stopped answering for 2s) and that a fresh one starts", got, want)
	}
	if !gone(pid) {
		t.Errorf("the replaced worker %d still runs", pid)
	}
}
