package debug

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// passHook is the hook a pass runs: the session's observers (fanned out
// by model.MultiHook), then the debugger's own hook. It reads Observers at every site, so observers added
// while a pass is stopped see the sites after the stop. The debugger's Want
// is always asked, since it records how far the ranks have got.
func (s *Session) passHook() model.Hook { return observed{s} }

type observed struct{ s *Session }

// Want asks the debugger's hook first (always), then the observers.
func (o observed) Want(ev *model.Event) bool {
	want := hook{o.s}.Want(ev) || o.s.wantsEdit(ev)
	return model.MultiHook(o.s.Observers).Want(ev) || want
}

// Visit runs the observers that want the site, then the debugger's hook
// (which may stop the pass there).
func (o observed) Visit(ev *model.Event, views []*model.RankView) error {
	if o.s.wantsEdit(ev) {
		if err := o.s.applyPending(ev, views); err != nil {
			return err
		}
	}
	if err := model.MultiHook(o.s.Observers).Visit(ev, views); err != nil {
		return err
	}
	if dbg := (hook{o.s}); dbg.Want(ev) {
		return dbg.Visit(ev, views)
	}
	return nil
}

// Borrow runs fn, which runs forward passes of its own on s.E (the layer
// matching of `check` and `diff`), when no pass of the session is stopped:
// the engine runs one pass at a time. fn's prefills replace the engine's
// sequences, so afterwards `gen` needs a new `run`. Errors: ErrBusy while a
// pass is stopped, or fn's.
func (s *Session) Borrow(fn func() error) error {
	if s.job != nil {
		return fmt.Errorf("%w: let it finish first (%s)", client.ErrBusy, finishHint)
	}
	if s.next != nil {
		s.nextBorrowed = true
	}
	s.next = nil
	return fn()
}

// finishHint says how a stopped pass ends: `run` would start another,
// which stops at the same breakpoints.
const finishHint = "continue to the end; `disable` keeps the breakpoints from stopping it again; or `kill` it"

// WantSites is the session's model.SiteFilter: the sites its Want may
// return true at during step, so that ranks in worker processes ask only
// there. Every site while tracing, stepping (`step`) or with an interrupt
// under way; else the resume mode's sites (`next`: depth, `finish`: the
// parent, `until`: its pattern), enabled breakpoints and watches, armed
// edits, and the observers' own filters (every site when one cannot say).
// Computed from state that changes only while the pass is stopped.
func (o observed) WantSites(step int, sites []*model.Site) []bool {
	s := o.s
	want := make([]bool, len(sites))
	s.mu.Lock()
	all := s.trace || s.intrPending > 0 || s.interruptAt >= 0 || s.mode.kind == "step"
	for i, st := range sites {
		if all {
			break
		}
		m := &s.mode
		switch m.kind {
		case "next":
			want[i] = st.Depth <= m.depth
		case "finish":
			want[i] = st == m.parent
		case "":
		default:
			want[i] = st.Index < len(m.at) && m.at[st.Index]
		}
		for _, b := range s.bps {
			want[i] = want[i] || (b.Enabled && st.Index < len(b.at) && b.at[st.Index])
		}
		for _, e := range s.iv.pending { // any step: persistent edits come back
			want[i] = want[i] || e.siteIdx == st.Index
		}
	}
	s.mu.Unlock()
	if all {
		return nil
	}
	w := model.MultiHook(s.Observers).WantSites(step, sites)
	if w == nil {
		return nil
	}
	for i, v := range w {
		want[i] = want[i] || v
	}
	return want
}

// Passed records how far a rank has got, as Want does (for Interrupt).
func (o observed) Passed(ev *model.Event) {
	s := o.s
	k := s.key(ev)
	s.mu.Lock()
	if k > s.maxSeen {
		s.maxSeen = k
	}
	s.mu.Unlock()
	model.MultiHook(s.Observers).Passed(ev)
}
