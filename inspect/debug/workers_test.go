package debug

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/worker"
	"hsdb/inspect/client"
)

// testWorkerEnv makes this test binary a rank worker (the fault tests
// start workers by running it again).
const testWorkerEnv = "HSDB_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(testWorkerEnv) == "1" {
		fs := flag.NewFlagSet("worker", flag.ExitOnError)
		connect := fs.String("connect", "", "")
		rank := fs.Int("rank", -1, "")
		fs.Parse(os.Args[1:])
		if err := worker.Serve(worker.WorkerConfig{Connect: *connect, Token: os.Getenv(worker.TokenEnv), Rank: *rank}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// workerSession is a session over stories260K with tp ranks in worker
// processes.
func workerSession(t *testing.T, tp int) (*Session, *worker.Front) {
	return workerSessionTimeout(t, tp, time.Minute)
}

// workerSessionTimeout is workerSession with the front's per-message
// timeout.
func workerSessionTimeout(t *testing.T, tp int, timeout time.Duration) (*Session, *worker.Front) {
	return workerSessionConfig(t, tp, worker.Config{Timeout: timeout})
}

// workerSessionConfig is workerSession with the front's configuration
// (pipeline stages, timeout).
func workerSessionConfig(t *testing.T, tp int, cfg worker.Config) (*Session, *worker.Front) {
	t.Helper()
	t.Setenv(testWorkerEnv, "1")
	cfg.Spawn, cfg.Command = true, []string{os.Args[0]}
	if cfg.JoinTimeout == 0 {
		cfg.JoinTimeout = time.Minute // a short Timeout is for hung steps, not a loaded host's process start
	}
	f, err := worker.Start(storiesBin, engine.Options{TP: tp}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.LoadLlama2C(storiesBin, engine.Options{TP: tp, Workers: f})
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	s := New(e)
	if err := s.SetBatch(twoSeqs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Kill(); e.Close() })
	return s, f
}

// killAt is an observer that SIGKILLs a process the first time any rank
// reaches site: a worker dying in the middle of a pass.
type killAt struct {
	site string
	pid  int
	sig  syscall.Signal // 0: SIGKILL
	do   func()         // instead of a signal
	once sync.Once
}

func (k *killAt) Want(ev *model.Event) bool {
	if ev.Site.Path == k.site {
		k.once.Do(func() {
			switch {
			case k.do != nil:
				k.do()
			case k.sig == syscall.SIGSTOP:
				stopProcess(k.pid) // stopped before the front answers (a late stop lets the worker run on)
			case k.sig != 0:
				syscall.Kill(k.pid, k.sig)
			default:
				syscall.Kill(k.pid, syscall.SIGKILL)
			}
		})
	}
	return false
}

func (k *killAt) Visit(*model.Event, []*model.RankView) error { return nil }

// TestWorkerKilledMidPass: SIGKILL one rank's worker in the middle of a
// pass. The pass fails with an error naming that rank, its pid and the
// site it was at; the session keeps its breakpoints and the captures
// recorded before the kill; the next `run` starts a fresh worker and
// stops at the breakpoint with the numbers of an in-process session.
func TestWorkerKilledMidPass(t *testing.T) {
	s, f := workerSession(t, 2)
	l := NewLocal(s)
	if _, err := l.Break("layers.3", "", false); err != nil {
		t.Fatal(err)
	}
	if err := l.CaptureLayers([]int{0}, "stream"); err != nil {
		t.Fatal(err)
	}
	pid := f.PID(1)
	s.Observers = append(s.Observers, &killAt{site: "model.layers.2.mlp", pid: pid})
	_, err := l.Run()
	if err == nil {
		t.Fatal("the pass survived the kill of rank 1's worker")
	}
	if !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) ||
		!strings.Contains(err.Error(), "model.layers.2") {
		t.Fatalf("the fault report: %v; want rank 1, pid %d and the site (model.layers.2...)", err, pid)
	}
	t.Logf("the fault: %v", err)
	bps, _ := l.Breakpoints()
	if len(bps) != 1 || bps[0].Pattern != "layers.3" {
		t.Errorf("breakpoints after the fault: %+v", bps)
	}
	cl, cerr := l.Captures()
	if cerr != nil || len(cl.Sequences) != 2 || cl.Sequences[0].Rows["hidden_states.0"] != len(twoSeqs[0]) {
		t.Errorf("captures after the fault: %+v (%v): want layer 0 of both sequences", cl, cerr)
	}
	// the next run: a fresh worker for rank 1, and the numbers of an
	// in-process session
	s.Observers = s.Observers[:len(s.Observers)-1]
	o, err := l.Run()
	mustStop(t, o, err, "model.layers.3")
	if f.PID(1) == pid {
		t.Errorf("rank 1 still has the killed worker's pid %d", pid)
	}
	streamAsInProcess(t, l, "model.layers.3", "through workers")
}

// streamAsInProcess checks that the stream l is stopped at (site, a
// decoder layer's output) has, on both ranks, the statistics of an
// in-process --tp 2 session stopped there: the numbers of the same model,
// reached through workers (how).
func streamAsInProcess(t *testing.T, l *Local, site, how string) {
	t.Helper()
	got, err := l.Print("stream", client.All)
	if err != nil {
		t.Fatal(err)
	}
	ref := NewLocal(newSession(t, 2))
	if _, err := ref.Break(site, "", false); err != nil {
		t.Fatal(err)
	}
	o, err := ref.Run()
	mustStop(t, o, err, site)
	want, err := ref.Print("stream", client.All)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Ranks) != 2 || len(want.Ranks) != 2 {
		t.Fatalf("%s ranks: %d %s, %d in process", site, len(got.Ranks), how, len(want.Ranks))
	}
	for r := range 2 {
		if g, w := got.Ranks[r].Stats, want.Ranks[r].Stats; g != w {
			t.Errorf("rank %d stream at %s: %+v %s, %+v in process", r, site, g, how, w)
		}
	}
}

// TestWorkerKilledAtStop: a worker killed while the pass is stopped makes
// the next query fail with an error naming its rank (no internal error),
// `continue` end the pass with the fault, and `run` start over.
func TestWorkerKilledAtStop(t *testing.T) {
	s, f := workerSession(t, 2)
	l := NewLocal(s)
	if _, err := l.Break("layers.1", "", false); err != nil {
		t.Fatal(err)
	}
	o, err := l.Run()
	mustStop(t, o, err, "model.layers.1")
	syscall.Kill(f.PID(0), syscall.SIGKILL)
	time.Sleep(100 * time.Millisecond)
	if _, err := l.Print("stream", client.All); !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 0") || strings.Contains(err.Error(), "internal error") {
		t.Errorf("print after the kill: %v, want the fault of rank 0", err)
	}
	if _, err := l.Continue(); !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 0") {
		t.Errorf("continue after the kill: %v, want the fault of rank 0", err)
	}
	o, err = l.Run()
	mustStop(t, o, err, "model.layers.1")
	if _, err := l.Print("stream", client.All); err != nil {
		t.Errorf("print after a fresh run: %v", err)
	}
}

// TestWorkerHungIsKilled: a worker that stops answering (SIGSTOP: as a
// rank stuck in a collective or a kernel) is declared hung after the
// front's timeout, killed, and reported with its rank; `run` then starts
// a fresh worker.
func TestWorkerHungIsKilled(t *testing.T) {
	s, f := workerSessionTimeout(t, 2, time.Second)
	l := NewLocal(s)
	pid := f.PID(1)
	s.Observers = append(s.Observers, &killAt{site: "model.layers.1", pid: pid, sig: syscall.SIGSTOP})
	_, err := l.Run()
	if !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "stopped answering") {
		t.Fatalf("run with a hung worker: %v, want rank 1 reported as hung", err)
	}
	if syscall.Kill(pid, 0) == nil {
		var ws syscall.WaitStatus
		if p, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); p != pid {
			time.Sleep(500 * time.Millisecond)
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("the hung worker %d is still running", pid)
			}
		}
	}
	runToEndWithout(t, s, l, "the hang")
}

// TestWorkersInterrupt: Ctrl-C while workers compute stops the pass at the
// next site (the front's hook answers every worker's want); the workers
// ignore the terminal's SIGINT themselves; the pass then finishes with the
// next tokens of an in-process session.
func TestWorkersInterrupt(t *testing.T) {
	s, f := workerSession(t, 2)
	l := NewLocal(s)
	s.Observers = append(s.Observers, &killAt{site: "model.layers.1.mlp", do: func() {
		syscall.Kill(f.PID(0), syscall.SIGINT)
		syscall.Kill(f.PID(1), syscall.SIGINT)
		s.Interrupt()
	}})
	o, err := l.Run()
	if err != nil || o.Stop == nil || strings.Join(o.Stop.Reasons, ";") != "interrupted" {
		t.Fatalf("run interrupted: %+v %v", o, err)
	}
	o, err = l.Continue()
	if err != nil || o.Done == nil {
		t.Fatalf("continue: %+v %v", o, err)
	}
	ref := newSession(t, 2)
	want, err := ref.Run()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(o.Done.Next) != fmt.Sprint(want.Done.Next) {
		t.Errorf("next tokens through workers %v, in process %v", o.Done.Next, want.Done.Next)
	}
}

// TestWorkerDiedBetweenPasses: a spawned worker that dies while no pass
// runs is replaced before the next `run`, which then succeeds, and whose
// outcome has one note naming rank 1, the dead worker's pid and that a
// fresh one replaced it (the notes --json prints); the first and a third
// run's outcomes have no such note.
func TestWorkerDiedBetweenPasses(t *testing.T) {
	s, f := workerSession(t, 2)
	l := NewLocal(s)
	first, err := l.Run()
	if err != nil || first.Done == nil {
		t.Fatalf("run: %+v %v", first, err)
	}
	pid := f.PID(1)
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	o, err := l.Run()
	if err != nil || o.Done == nil {
		t.Fatalf("run after the worker died between passes: %+v %v", o, err)
	}
	if fmt.Sprint(o.Done.Next) != fmt.Sprint(first.Done.Next) || f.PID(1) == pid {
		t.Errorf("next tokens %v (first run %v), rank 1's pid %d (was %d)", o.Done.Next, first.Done.Next, f.PID(1), pid)
	}
	want := fmt.Sprintf("rank 1's worker was replaced by a fresh one when this pass began; it was ended: %v: rank 1 (pid %d on ", engine.ErrWorker, pid)
	if n := o.Done.Notes; len(n) != 1 || !strings.HasPrefix(n[0], want) {
		t.Errorf("the run's notes %q, want one starting %q", n, want)
	}
	third, err := l.Run()
	if err != nil || third.Done == nil {
		t.Fatalf("third run: %+v %v", third, err)
	}
	if len(first.Done.Notes) != 0 || len(third.Done.Notes) != 0 {
		t.Errorf("notes of runs that replaced no worker: first %q, third %q", first.Done.Notes, third.Done.Notes)
	}
}

// panicAt is an observer whose Want panics at site: a bug in the front's
// hook in the middle of a pass.
type panicAt struct{ site string }

func (p panicAt) Want(ev *model.Event) bool {
	if ev.Site.Path == p.site {
		panic("observer bug")
	}
	return false
}

func (panicAt) Visit(*model.Event, []*model.RankView) error { return nil }

// TestWorkersFrontPanic: a panic in the front's hook mid-pass is the
// pass's internal error, not the end of the process; the workers it left
// mid-step are replaced and the next run gives the in-process tokens.
func TestWorkersFrontPanic(t *testing.T) {
	s, _ := workerSession(t, 2)
	l := NewLocal(s)
	s.Observers = append(s.Observers, panicAt{site: "model.layers.1"})
	if _, err := l.Run(); err == nil || !strings.Contains(err.Error(), "observer bug") {
		t.Fatalf("run with a panicking observer: %v", err)
	}
	o := runToEndWithout(t, s, l, "the panic")
	want, err := newSession(t, 2).Run()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(o.Done.Next) != fmt.Sprint(want.Done.Next) {
		t.Errorf("next tokens %v, in process %v", o.Done.Next, want.Done.Next)
	}
}

// TestPipelineWorkerKilled: with --pp 2 --tp 2, a second-stage worker
// killed while the first stage computes fails the pass naming its rank
// and stage; the session keeps its breakpoint in the second stage, and the
// next run stops there with the in-process statistics.
func TestPipelineWorkerKilled(t *testing.T) {
	s, f := workerSessionConfig(t, 2, worker.Config{PP: 2, Timeout: time.Minute})
	l := NewLocal(s)
	if _, err := l.Break("layers.4", "", false); err != nil {
		t.Fatal(err)
	}
	pid := f.PID(3) // slot 3: rank 1 of stage 1 (layers 3-4)
	s.Observers = append(s.Observers, &killAt{site: "model.layers.1", pid: pid})
	_, err := l.Run()
	if !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 1 of stage 1") {
		t.Fatalf("run with a killed second-stage worker: %v", err)
	}
	s.Observers = s.Observers[:len(s.Observers)-1]
	o, err := l.Run()
	mustStop(t, o, err, "model.layers.4")
	streamAsInProcess(t, l, "model.layers.4", "through stages")
}

// runToEndWithout drops the last observer of s (the test's fault) and
// runs the next pass through l, which must finish (the session outlived
// what, named in the failure); it returns that pass's outcome.
func runToEndWithout(t *testing.T, s *Session, l *Local, what string) *client.Outcome {
	t.Helper()
	s.Observers = s.Observers[:len(s.Observers)-1]
	o, err := l.Run()
	if err != nil || o.Done == nil {
		t.Fatalf("run after %s: %+v %v", what, o, err)
	}
	return o
}
