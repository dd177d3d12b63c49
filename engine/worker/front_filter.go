package worker

import (
	"fmt"
	"sync"
	"time"

	"hsdb/engine/model"
)

// interrupts is the front's state of Ctrl-C's under way: each interrupt
// has an epoch; the workers busy with a step when it came are asked for
// their position, and done runs once each has reported or ended its step.
type interrupts struct {
	mu      sync.Mutex
	epoch   uint64
	waiting map[*remoteRank]bool
	dones   []func()
}

// Interrupt tells every worker running a step to ask the front at every
// site from now on and to report the last site it reached, which is given
// to the step's hook (model.SiteFilter.Passed); done runs once all have
// reported or ended their steps (at once when none runs). A worker that
// sends nothing within abandonGrace of the interrupt, or leaves a request
// of the front unanswered as long, is ended as failed (abandon.go), which
// ends its step with the fault: a stopped worker never blocks Ctrl-C.
func (f *Front) Interrupt(done func()) {
	f.intr.mu.Lock()
	f.intr.epoch++
	f.intr.dones = append(f.intr.dones, done)
	f.intr.waiting = map[*remoteRank]bool{}
	f.mu.Lock()
	slots := append([]*remoteRank(nil), f.slots...)
	f.mu.Unlock()
	var at []*model.Event // the sites where workers wait in a visit
	var hooks []model.SiteFilter
	for _, r := range slots {
		if r == nil || !r.busy {
			continue
		}
		var e enc
		e.i64(int64(f.intr.epoch))
		if r.c.send(kindInterrupt, &e) != nil {
			continue // a broken connection ends the step, which counts as its report
		}
		r.mu.Lock()
		pass, ev := r.openPass, r.openEv
		r.mu.Unlock()
		if ev == nil {
			f.intr.waiting[r] = true
			continue
		}
		// waiting in a visit: the front knows where (its report, which
		// comes when the visit ends, is then stale)
		if h, ok := pass.Hook.(model.SiteFilter); ok {
			at, hooks = append(at, ev), append(hooks, h)
		}
	}
	for i, ev := range at {
		hooks[i].Passed(ev)
	}
	if len(f.intr.waiting) > 0 { // a worker that does not report within abandonGrace is ended
		ep, t0 := f.intr.epoch, time.Now()
		time.AfterFunc(abandonGrace, func() { f.abandonUnreported(ep, t0) })
	}
	fire := f.intr.takeLocked()
	f.intr.mu.Unlock()
	run(fire)
	f.Abandon() // a query of the hook (a breakpoint's condition) a worker does not answer
}

// takeLocked returns the done functions to run when no worker is still
// to report.
func (in *interrupts) takeLocked() []func() {
	if len(in.waiting) > 0 {
		return nil
	}
	d := in.dones
	in.dones = nil
	return d
}

func run(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// sendFiltered sends a step (begin: the worker is busy from now on) or a
// resume with the site filter of pass's hook for step appended: the sites
// of the worker's model the hook may want (model.SiteFilter), every site
// for a hook that cannot say. The interrupt epoch is read and the filter
// computed under the interrupts' lock, so that an interrupt either comes
// before (and the filter, computed after the hook learnt of it, accounts
// for it) or is sent after this message (and the worker, in its step,
// receives it).
func (r *remoteRank) sendFiltered(kind byte, e *enc, pass *model.Pass, step int, begin bool) error {
	f := r.f
	f.intr.mu.Lock()
	defer f.intr.mu.Unlock()
	var want []bool
	if pass.Hook != nil && !f.cfg.askAll {
		if all := model.WantSitesOf(pass.Hook, step, f.tree); all != nil {
			want = make([]bool, len(r.sites))
			for i, st := range r.sites {
				want[i] = all[st.Index]
			}
		}
	}
	encFilter(e, f.intr.epoch, want)
	err := r.c.send(kind, e)
	if begin && err == nil {
		r.busy = true
	}
	return err
}

// positioned handles a worker's position report of an interrupt: the
// step's hook learns the site the worker reached (Passed), and the
// interrupt counts the worker as reported.
func (r *remoteRank) positioned(pass *model.Pass, b *model.Batch, d *dec) error {
	ep, site, step := uint64(d.i64()), d.str(), d.int()
	if d.err != nil {
		return fmt.Errorf("protocol: a bad position report (%v)", d.err)
	}
	if site != "" {
		st := r.f.sites[site]
		if st == nil || step != b.Step {
			return fmt.Errorf("protocol: a position at site %q, step %d in step %d", site, step, b.Step)
		}
		if h, ok := pass.Hook.(model.SiteFilter); ok {
			h.Passed(&model.Event{Site: st, Step: step, Batch: b})
		}
		r.mu.Lock()
		r.lastSite, r.lastStep = st.Path, step
		r.mu.Unlock()
	}
	in := &r.f.intr
	in.mu.Lock()
	var fire []func()
	if ep == in.epoch && in.waiting[r] {
		delete(in.waiting, r)
		fire = in.takeLocked()
	}
	in.mu.Unlock()
	run(fire)
	return nil
}

// endStep marks the worker's step over; an interrupt still waiting for its
// report counts it as reported (it passed every site).
func (r *remoteRank) endStep() {
	in := &r.f.intr
	in.mu.Lock()
	r.busy = false
	var fire []func()
	if in.waiting[r] {
		delete(in.waiting, r)
		fire = in.takeLocked()
	}
	in.mu.Unlock()
	run(fire)
}

// recvQueued reads the worker's reply to a query of the front (at a stop:
// moments, values, memory), queueing the position reports of an interrupt
// that come first: handling one calls the hook, which may be what is
// waiting for this reply (a breakpoint's condition), so the step's loop
// handles them (drainPositions).
func (r *remoteRank) recvQueued() (byte, *dec, error) {
	id := r.beginAsk() // Ctrl-C may abandon it (Abandon)
	defer r.endAsk(id)
	for {
		k, d, err := r.c.recv(0)
		if err == nil && k == kindPeerWait {
			continue // a note of a step's wait that ended as the front asked
		}
		if err != nil || k != kindPosition {
			return k, d, err
		}
		r.mu.Lock()
		r.queued = append(r.queued, d)
		r.mu.Unlock()
	}
}

// drainPositions handles the position reports recvQueued queued.
func (r *remoteRank) drainPositions(pass *model.Pass, b *model.Batch) error {
	r.mu.Lock()
	q := r.queued
	r.queued = nil
	r.mu.Unlock()
	for _, d := range q {
		if err := r.positioned(pass, b, d); err != nil {
			return err
		}
	}
	return nil
}

// Asked returns how many times workers have asked the front whether a site
// is wanted (want messages) since the front started: with a hook that is a
// model.SiteFilter, only at the sites it named.
func (f *Front) Asked() int64 { return f.wants.Load() }
