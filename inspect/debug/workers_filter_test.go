package debug

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"hsdb/engine/model"
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
// next site after an interrupt, the site an in-process session stops at
// (model.layers.1, the layer's own site right after its mlp), with the
// same statistics there; until the interrupt they asked only at the
// observer's site (one want per rank), and the rest of the pass finishes
// with the in-process next tokens.
func TestWorkersInterruptFiltered(t *testing.T) {
	s, f := workerSession(t, 2)
	ref := newSession(t, 2)
	var stops [2]string
	var stats [2]string
	var nexts [2]string
	for i, ss := range []*Session{s, ref} {
		ss.Observers = append(ss.Observers, &interruptIn{s: ss, site: "model.layers.1.mlp"})
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
		p, err := l.Print("stream", client.All)
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
	if stops[0] != "model.layers.1" || stops[1] != "model.layers.1" {
		t.Errorf("stopped at %s through workers, %s in process; want model.layers.1", stops[0], stops[1])
	}
	if stats[0] != stats[1] || nexts[0] != nexts[1] {
		t.Errorf("through workers: stream %s, next %s; in process: %s, %s", stats[0], nexts[0], stats[1], nexts[1])
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
