package debug

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hsdb/engine/model"
	"hsdb/engine/worker"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

// interruptIn is an observer that watches one site and says so
// (model.SiteFilter): at its visit it interrupts the session, as Ctrl-C
// would.
type interruptIn struct {
	s    *Session
	site string
	done bool
}

func (o *interruptIn) Want(ev *model.Event) bool { return ev.Site.Path == o.site }
func (o *interruptIn) Visit(*model.Event, []*model.RankView) error {
	if !o.done {
		o.done = true
		o.s.Interrupt()
	}
	return nil
}
func (o *interruptIn) WantSites(_ int, sites []*model.Site) []bool {
	w := make([]bool, len(sites))
	for i, s := range sites {
		w[i] = s.Path == o.site
	}
	return w
}
func (o *interruptIn) Passed(*model.Event) {}

// TestWorkersInterruptFiltered: workers that ask the front only at the
// sites the session may want (here one observer's site) still stop at the
// next site after an interrupt, the site an in-process session stops at,
// with the same statistics there; until the interrupt they asked only at
// the observer's site (one want per rank), and the rest of the pass
// finishes with the in-process next tokens. With --pp 2 (stages: layers
// 0-2 and 3-4) an interrupt at model.layers.2, stage 0's last site, stops
// at stage 1's first site, whose step starts after the interrupt.
func TestWorkersInterruptFiltered(t *testing.T) {
	for _, c := range []struct {
		pp         int
		site, stop string
	}{{1, "model.layers.1.mlp", "model.layers.1"}, {2, "model.layers.2", "model.layers.3.input_layernorm"}} {
		t.Run(fmt.Sprintf("pp%d", c.pp), func(t *testing.T) {
			s, f := workerSessionConfig(t, 2, worker.Config{PP: c.pp, Timeout: time.Minute})
			ref := newSession(t, 2)
			var stops, stats, nexts [2]string
			for i, ss := range []*Session{s, ref} {
				ss.Observers = append(ss.Observers, &interruptIn{s: ss, site: c.site})
				l := NewLocal(ss)
				o, err := l.Run()
				if err != nil || o.Stop == nil || strings.Join(o.Stop.Reasons, ";") != "interrupted" {
					t.Fatalf("session %d: run: %+v %v", i, o, err)
				}
				stops[i] = o.Stop.Site
				if i == 0 {
					if n := f.Asked(); n != 2*2 { // 2 ranks at the observer's site, then at the stop
						t.Errorf("workers asked the front %d times before the stop; want 4 (the observer's site and the stop, per rank)", n)
					}
				}
				p, err := l.Print(ss.E.Tree.Site(stops[i]).Tensors[0], client.All)
				if err != nil {
					t.Fatal(err)
				}
				stats[i] = fmt.Sprint(p.Ranks[0].Stats, p.Ranks[1].Stats)
				o, err = l.Continue()
				if err != nil || o.Done == nil {
					t.Fatalf("session %d: continue: %+v %v", i, o, err)
				}
				nexts[i] = fmt.Sprint(o.Done.Next)
			}
			if stops[0] != c.stop || stops[1] != c.stop {
				t.Errorf("stopped at %s through workers, %s in process; want %s", stops[0], stops[1], c.stop)
			}
			if stats[0] != stats[1] || nexts[0] != nexts[1] {
				t.Errorf("through workers: %s, next %s; in process: %s, %s", stats[0], nexts[0], stats[1], nexts[1])
			}
		})
	}
}

// TestWorkersCtrlCWhileComputing: Ctrl-C (Session.Interrupt from another
// goroutine) while the workers compute between sites nobody watches — they
// then ask nothing — stops the pass at a site of the same step, and the
// pass then finishes with the in-process next tokens. The interrupt comes
// after a growing delay until one lands inside the pass.
func TestWorkersCtrlCWhileComputing(t *testing.T) {
	s, _ := workerSession(t, 2)
	var long [][]int32
	for q := range 4 {
		var ids []int32
		for i := range 200 {
			ids = append(ids, int32(1+(q*131+i*7)%500))
		}
		long = append(long, ids)
	}
	if err := s.SetBatch(long); err != nil {
		t.Fatal(err)
	}
	ref := newSession(t, 2)
	if err := ref.SetBatch(long); err != nil {
		t.Fatal(err)
	}
	want, err := NewLocal(ref).Run()
	if err != nil || want.Done == nil {
		t.Fatalf("in process: %+v %v", want, err)
	}
	l := NewLocal(s)
	for _, delay := range []time.Duration{time.Millisecond, 3 * time.Millisecond, 6 * time.Millisecond, 12 * time.Millisecond} {
		go func() {
			time.Sleep(delay)
			s.Interrupt()
		}()
		o, err := l.Run()
		if err != nil {
			t.Fatal(err)
		}
		if o.Stop == nil {
			continue // the pass was over before the interrupt: try later
		}
		if strings.Join(o.Stop.Reasons, ";") != "interrupted" || o.Stop.Step != 0 {
			t.Fatalf("stop %+v; want interrupted in step 0", o.Stop)
		}
		t.Logf("interrupted after %s at %s", delay, o.Stop.Site)
		o, err = l.Continue()
		if err != nil || o.Done == nil {
			t.Fatalf("continue: %+v %v", o, err)
		}
		if fmt.Sprint(o.Done.Next) != fmt.Sprint(want.Done.Next) {
			t.Errorf("next tokens through workers %v, in process %v", o.Done.Next, want.Done.Next)
		}
		return
	}
	t.Fatal("no interrupt landed inside a pass")
}

// cancelIn cancels a capture job's context at its visit of one site, which
// it watches and says so (model.SiteFilter); last is the last site any rank
// asked about.
type cancelIn struct {
	site   string
	cancel context.CancelFunc
	placed chan struct{} // closed once the job's stop is placed
	mu     sync.Mutex
	last   string
}

func (c *cancelIn) Want(ev *model.Event) bool {
	c.mu.Lock()
	c.last = ev.Site.Path
	c.mu.Unlock()
	return ev.Site.Path == c.site
}
func (c *cancelIn) Visit(*model.Event, []*model.RankView) error {
	c.cancel()
	select { // as a SIGTERM arriving mid-row: the stop is placed before the pass goes on
	case <-c.placed:
	case <-time.After(10 * time.Second):
	}
	return nil
}
func (c *cancelIn) WantSites(_ int, sites []*model.Site) []bool {
	w := make([]bool, len(sites))
	for i, s := range sites {
		w[i] = s.Path == c.site
	}
	return w
}
func (c *cancelIn) Passed(*model.Event) {}

// TestWorkersCaptureJobInterrupted: a capture job through workers whose
// context is cancelled mid-pass (SIGTERM, Ctrl-C) at model.layers.1 stops
// at the next site — the workers, which asked only at the capture's and
// the canceller's sites, are told to ask everywhere and where they are is
// known (they wait at the canceller's site) — so the pass never reaches
// lm_head, the job returns ErrInterrupted and keeps nothing of
// that batch, as the in-process job does (inspect/capture's case 14).
func TestWorkersCaptureJobInterrupted(t *testing.T) {
	s, f := workerSession(t, 2)
	l := NewLocal(s)
	in, err := capture.ParseIDsList("1,2,3,4;1,5,6", capture.LimitsOf(s.E.Dims))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ca := &cancelIn{site: "model.layers.1", cancel: cancel, placed: make(chan struct{})}
	tg := l.target()
	interrupt := tg.Interrupt
	tg.Interrupt = func(done func()) { interrupt(func() { done(); close(ca.placed) }) }
	prefill := tg.Prefill
	tg.Prefill = func(seqs [][]int32, h model.Hook) error { return prefill(seqs, model.MultiHook{ca, h}) }
	before := f.Asked()
	out := filepath.Join(t.TempDir(), "o")
	res, err := capture.RunCaptureJob(ctx, tg, in, capture.JobOptions{Layers: []int{0, 3}, Out: out})
	if !errors.Is(err, capture.ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	ca.mu.Lock()
	last := ca.last
	ca.mu.Unlock()
	if next := s.E.Tree.Sites[s.E.Tree.Site("model.layers.1").Index+1].Path; last != next {
		t.Errorf("the last site asked about is %s; want %s, the one after model.layers.1", last, next)
	}
	// Each rank asks at the capture's sites up to model.layers.1 (layer
	// 0's), at the canceller's and at the stop: 3 wants, not one per site.
	if n := f.Asked() - before; n != 2*3 {
		t.Errorf("the workers asked the front %d times; want 6 (%d sites, 2 ranks)", n, len(s.E.Tree.Sites))
	}
	if res.Done != 0 {
		t.Errorf("%d sequences recorded from an interrupted pass", res.Done)
	}
}
