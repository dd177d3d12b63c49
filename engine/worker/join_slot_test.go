package worker

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hsdb/engine"
)

// TestJoinNoSuchSlotRefused: with --tp 2 (slots 0 and 1) a worker that
// asks for --rank 5 is refused at once with the session's slots named,
// both while the front waits for its workers and once every slot has
// one (before, it waited --worker-timeout in silence, then heard "no rank
// is waiting"). The front's timeout here is a minute; the refusal must
// come within 5 s.
func TestJoinNoSuchSlotRefused(t *testing.T) {
	cfg := Config{Token: "tok", Timeout: time.Minute}
	addr, started := startListening(t, engine.DefaultModelPath, engine.Options{TP: 2}, cfg)
	join := func(rank int) error {
		out := make(chan error, 1)
		go func() { out <- Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: rank, Dial: 5 * time.Second}) }()
		select {
		case err := <-out:
			return err
		case <-time.After(5 * time.Second):
			t.Fatalf("a worker asking for slot %d was not answered within 5 s", rank)
			return nil
		}
	}
	check := func(when string, err error) {
		if err == nil || !strings.Contains(err.Error(), "slot 5") || !strings.Contains(err.Error(), "slots 0-1") {
			t.Errorf("%s: --rank 5: %v; want a refusal naming slot 5 and the session's slots 0-1", when, err)
		}
	}
	check("while the front waits", join(5))
	for r := range 2 {
		go Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: r, Dial: 5 * time.Second})
	}
	s := <-started
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.f.Close()
	check("with every slot taken", join(5))
}

// TestJoinedWorkerLogNamesItsStage: with --pp 2 (--tp 1) the two joined
// workers are both rank 0 of 1, each of its own stage; each one's note
// must say which stage and layers it loads (stories260K's 5 layers split
// as vLLM splits them: 0-2 and 3-4), not only "rank 0 of 1" twice.
func TestJoinedWorkerLogNamesItsStage(t *testing.T) {
	cfg := Config{Token: "tok", PP: 2, Timeout: time.Minute}
	addr, started := startListening(t, engine.DefaultModelPath, engine.Options{TP: 1}, cfg)
	logs := [2]*lockedLog{{}, {}}
	for slot := range 2 {
		go Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: slot, Dial: 5 * time.Second, Log: logs[slot]})
	}
	s := <-started
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.f.Close()
	for slot, want := range []string{"rank 0 of 1, stage 0 of 2 (decoder layers 0-2)", "rank 0 of 1, stage 1 of 2 (decoder layers 3-4)"} {
		if got := logs[slot].String(); !strings.Contains(got, want) {
			t.Errorf("slot %d's note %q, want it to say %q", slot, got, want)
		}
	}
}

// lockedLog is a strings.Builder safe for a worker goroutine's notes.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestJoinedWorkerEndedWaitsForAJoin: when a joined worker (--listen) is
// found dead as a pass begins, the front starts nothing (it cannot: the
// worker ran on another host): its note must say it waits for a worker
// to join in that slot, with the command for exactly that slot (--rank
// 1), not "starting a fresh one". A worker that joins as slot 1 then
// lets the pass begin.
func TestJoinedWorkerEndedWaitsForAJoin(t *testing.T) {
	log := &lockedLog{}
	cfg := Config{Token: "tok", Timeout: time.Minute, Log: log}
	addr, started := startListening(t, engine.DefaultModelPath, engine.Options{TP: 2}, cfg)
	for slot := range 2 {
		go Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: slot, Dial: 5 * time.Second})
	}
	s := <-started
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.f.Close()
	s.f.slot(1).fault(io.EOF) // as when its connection ended
	begun := make(chan error, 1)
	go func() { begun <- s.f.Begin(true) }()
	for end := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), "--rank 1\n") && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	got := log.String()
	if strings.Contains(got, "starting a fresh one") || !strings.Contains(got, "rank 1's worker was ended") ||
		!strings.Contains(got, "waiting for a worker to join as slot 1") || !strings.Contains(got, "hsdb worker --connect "+addr+" --token tok --rank 1\n") {
		t.Errorf("front's notes:\n%s\nwant: rank 1's worker was ended, waiting for a worker to join as slot 1, with its command", got)
	}
	go Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: 1, Dial: 5 * time.Second})
	if err := <-begun; err != nil {
		t.Fatalf("Begin after slot 1 joined again: %v", err)
	}
}

// TestListenWildcardPrintsAHost: a front listening on every interface
// (--listen :PORT) prints a join command with this host's name and the
// port, not the wildcard address ([::]:PORT or 0.0.0.0:PORT), which a
// worker on another host cannot dial.
func TestListenWildcardPrintsAHost(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	log := &lockedLog{}
	cfg := Config{Listen: ":0", Token: "tok", Timeout: time.Minute, Log: log}
	addr, started := startListening(t, engine.DefaultModelPath, engine.Options{TP: 1}, cfg)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	go Serve(WorkerConfig{Connect: net.JoinHostPort("127.0.0.1", port), Token: "tok", Rank: -1, Dial: 5 * time.Second})
	s := <-started
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.f.Close()
	want := "hsdb worker --connect " + net.JoinHostPort(host, port) + " --token tok"
	if got := log.String(); !strings.Contains(got, want) {
		t.Errorf("front's note %q, want %q", got, want)
	}
}

// TestJoinedWorkerGetsAnAbsoluteModelPath: the front's --model given
// relative to its working directory (../../testdata/hf/llama) must reach
// a joined worker as the absolute path it names, so that a worker started
// in another directory (a launcher's, another host's over a shared
// filesystem) loads the same model instead of failing with "no such file
// or directory".
func TestJoinedWorkerGetsAnAbsoluteModelPath(t *testing.T) {
	rel := "../../testdata/hf/llama"
	abs, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedLog{}
	cfg := Config{Token: "tok", Timeout: time.Minute}
	addr, started := startListening(t, rel, engine.Options{TP: 1}, cfg)
	go Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: -1, Dial: 5 * time.Second, Log: log})
	s := <-started
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.f.Close()
	if got := log.String(); !strings.Contains(got, "loading "+abs+"\n") {
		t.Errorf("the worker's note %q, want it to load %s", got, abs)
	}
}

// TestJoinTakenSlotRefused: with --tp 2, a second worker asking for slot
// 0 while the front still waits for slot 1 is refused at once, told that
// slot 0 already has a worker (before: "rank 0 is not waiting for a
// worker"), and the front's log names the refusal; a worker for slot 1
// then completes the start.
func TestJoinTakenSlotRefused(t *testing.T) {
	log := &lockedLog{}
	cfg := Config{Token: "tok", Timeout: time.Minute, Log: log}
	addr, started := startListening(t, engine.DefaultModelPath, engine.Options{TP: 2}, cfg)
	// Two workers ask for slot 0: one takes it (and serves until the
	// session ends), the other must be refused at once.
	refused := make(chan error, 2)
	for range 2 {
		go func() { refused <- Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: 0, Dial: 5 * time.Second}) }()
	}
	var err error
	select {
	case err = <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("neither of two workers for slot 0 was answered within 10 s")
	}
	if err == nil || !strings.Contains(err.Error(), "slot 0 already has a worker") {
		t.Fatalf("a second worker for slot 0: %v; want a refusal saying slot 0 already has a worker", err)
	}
	go Serve(WorkerConfig{Connect: addr, Token: "tok", Rank: 1, Dial: 5 * time.Second})
	s := <-started
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.f.Close()
	if !strings.Contains(log.String(), "refused a worker") || !strings.Contains(log.String(), "slot 0 already has a worker") {
		t.Errorf("the front's log %q does not name the refusal", log.String())
	}
}
