package worker

import (
	"fmt"
	"sync"

	"hsdb/engine/model"
)

// The site filter: before each step and with each resume after a visit,
// the front sends which of the worker's sites its hook may want
// (model.SiteFilter, encFilter); the worker runs through every other site
// without asking. An interrupt (Ctrl-C) comes as a message of its own,
// read while the worker computes: from then on the worker asks at every
// site, and it reports the last site it reached so that the front's hook
// can place its stop after every rank (kindInterrupt, kindPosition).

// encFilter writes a site filter: the interrupt epoch it accounts for,
// then either "every site" or one byte per site of the worker's model, in
// the worker's visit order.
func encFilter(e *enc, epoch uint64, want []bool) {
	e.i64(int64(epoch))
	e.bool(want == nil)
	if want == nil {
		return
	}
	e.u32(uint32(len(want)))
	for _, w := range want {
		e.bool(w)
	}
}

// decFilter reads what encFilter wrote; want is nil for every site.
func decFilter(d *dec) (epoch uint64, want []bool) {
	epoch = uint64(d.i64())
	if d.bool() {
		return epoch, nil
	}
	n := d.count(1)
	want = make([]bool, n)
	for i := range want {
		want[i] = d.bool()
	}
	return epoch, want
}

// gate is a worker's record of which sites of the running step it must ask
// the front about, and where the step is (for an interrupt's report).
type gate struct {
	mu     sync.Mutex
	inStep bool
	step   int
	site   string // the last site the step reached; "" before the first
	want   []bool // by the worker's site index; nil: every site
	epoch  uint64 // the interrupt epoch the filter accounts for
	intr   uint64 // the latest interrupt epoch received
}

// begin starts a step with the front's filter.
func (g *gate) begin(step int, epoch uint64, want []bool) {
	g.mu.Lock()
	g.inStep, g.step, g.site = true, step, ""
	g.setLocked(epoch, want)
	g.mu.Unlock()
}

// set replaces the filter (a resume after a visit).
func (g *gate) set(epoch uint64, want []bool) {
	g.mu.Lock()
	g.setLocked(epoch, want)
	g.mu.Unlock()
}

func (g *gate) setLocked(epoch uint64, want []bool) {
	g.want = want
	if epoch > g.epoch {
		g.epoch = epoch
	}
}

// end marks the step over: an interrupt that comes later has nothing to
// report (the front counts the step's end instead).
func (g *gate) end() {
	g.mu.Lock()
	g.inStep = false
	g.mu.Unlock()
}

// ask records that the step reached site and reports whether the front
// must be asked there: the filter names it, it is outside the filter (a
// site the front did not know of: ask), or an interrupt came that the
// filter does not account for.
func (g *gate) ask(site *model.Site) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.site = site.Path
	return g.want == nil || g.intr > g.epoch || site.Index >= len(g.want) || g.want[site.Index]
}

// where says where the step was ("; it was at SITE, step N"), or "":
// the front knows only the sites the worker asked about.
func (g *gate) where() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.site == "" {
		return ""
	}
	return fmt.Sprintf("; it was at %s, step %d", g.site, g.step)
}

// interrupt records interrupt epoch and, inside a step, reports the
// step's position to the front (under the lock, so that the report goes
// out before the step's end: the front reads it in the step).
func (g *gate) interrupt(s *server, epoch uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if epoch > g.intr {
		g.intr = epoch
	}
	if !g.inStep {
		return nil
	}
	var e enc
	e.i64(int64(epoch))
	e.str(g.site)
	e.int(g.step)
	return s.c.send(kindPosition, &e)
}

// frame is one message from the front as the worker's reader goroutine
// hands it on.
type frame struct {
	k   byte
	d   *dec
	err error
}

// read is the worker's reader goroutine: it answers interrupts and
// records peer aborts itself (the worker may be computing or waiting for
// a peer) and hands every other message on, in order; it ends after
// handing on a read error.
func (s *server) read() {
	for {
		k, d, err := s.c.recv(-1)
		if err == nil && k == kindInterrupt {
			ep := uint64(d.i64())
			if d.err != nil {
				err = fmt.Errorf("protocol: a bad interrupt (%v)", d.err)
			} else if err = s.gate.interrupt(s, ep); err == nil {
				continue
			}
		}
		if err == nil && k == kindPeerAbort && s.peers != nil {
			seq := uint64(d.i64())
			if d.err != nil {
				err = fmt.Errorf("protocol: a bad peer abort (%v)", d.err)
			} else {
				s.peers.abort(seq)
				continue
			}
		}
		if err != nil && s.peers != nil {
			s.peers.abort(1 << 62) // no step goes on without the front: end any wait for a peer
		}
		s.in <- frame{k, d, err}
		if err != nil {
			return
		}
	}
}

// next returns the front's next message (other than interrupts).
func (s *server) next() (byte, *dec, error) {
	f := <-s.in
	return f.k, f.d, f.err
}
