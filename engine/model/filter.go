package model

// SiteFilter is implemented by a Hook that can say ahead of time at which
// sites its Want may return true, so that a rank running in a worker
// process (engine/worker) runs through every other site without asking
// the front: a round trip per site is what made workers slow. A hook that
// does not implement it is asked at every site.
//
// The answer may depend only on state that changes while a pass is
// stopped in Visit or between passes (breakpoints, the resume mode, armed
// edits, captures): the front asks again before each step and after each
// Visit. An interrupt, which changes the hook's state while the pass runs,
// reaches the workers as a message of its own (Engine.Interrupt).
type SiteFilter interface {
	// WantSites returns, for each of sites (the model's sites in visit
	// order), whether Want may return true at it during step; nil means
	// it may at any site. A true where Want then says false costs one
	// round trip; a false where Want would say true loses a stop, so an
	// implementation that is in doubt answers true (or nil).
	WantSites(step int, sites []*Site) []bool
	// Passed tells the hook that a rank has reached ev's site without
	// asking Want there (a worker's position when an interrupt came):
	// the hook records what Want would have recorded (how far the ranks
	// have got), and gives no answer.
	Passed(ev *Event)
}

// WantSites is the union of the hooks' site filters (see SiteFilter); nil
// when any hook is not a SiteFilter or may want any site.
func (m MultiHook) WantSites(step int, sites []*Site) []bool {
	var out []bool
	for _, h := range m {
		if h == nil {
			continue
		}
		w := WantSitesOf(h, step, sites)
		if w == nil {
			return nil
		}
		if out == nil {
			out = make([]bool, len(sites))
		}
		for i, v := range w {
			out[i] = out[i] || v
		}
	}
	if out == nil {
		out = make([]bool, len(sites))
	}
	return out
}

// Passed tells every hook that is a SiteFilter.
func (m MultiHook) Passed(ev *Event) {
	for _, h := range m {
		if f, ok := h.(SiteFilter); ok {
			f.Passed(ev)
		}
	}
}

// WantSitesOf returns h's site filter for step (SiteFilter.WantSites),
// or nil (every site) when h is not a SiteFilter or its answer does not
// have one entry per site.
func WantSitesOf(h Hook, step int, sites []*Site) []bool {
	f, ok := h.(SiteFilter)
	if !ok {
		return nil
	}
	w := f.WantSites(step, sites)
	if len(w) != len(sites) {
		return nil
	}
	return w
}
