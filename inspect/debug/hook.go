package debug

import (
	"fmt"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
	"hsdb/inspect/stats"
)

// hook is the session's model.Hook. Want decides from state that changes
// only while the pass is stopped (breakpoints, the resume mode, tracing) or
// from the interrupt point, which Interrupt places after every site any rank
// has asked about, so every rank gives the same answers.
type hook struct{ s *Session }

// resumeMode is what the command that resumed the pass stops at, besides
// breakpoints: the next site (step), the next site at depth <= depth (next),
// the parent's site (finish), or sites of a pattern (until); only sites
// after key from.
type resumeMode struct {
	kind   string
	from   int64
	depth  int
	parent *model.Site
	at     []bool
	what   string
}

func (m *resumeMode) wants(site *model.Site, k int64) bool {
	if m.kind == "" || k <= m.from {
		return false
	}
	switch m.kind {
	case "step":
		return true
	case "next":
		return site.Depth <= m.depth
	case "finish":
		return site == m.parent
	}
	return m.at[site.Index]
}

// Want records how far the ranks have got (for Interrupt) and asks for the
// site when tracing, interrupted, the resume mode wants it, or an enabled
// breakpoint or watch can fire there.
func (h hook) Want(ev *model.Event) bool {
	s := h.s
	k := s.key(ev)
	s.mu.Lock()
	defer s.mu.Unlock()
	if k > s.maxSeen {
		s.maxSeen = k
	}
	if s.trace || (s.interruptAt >= 0 && k >= s.interruptAt) || s.mode.wants(ev.Site, k) {
		return true
	}
	for _, b := range s.bps {
		if b.Enabled && b.at[ev.Site.Index] {
			return true
		}
	}
	return false
}

// Visit runs with every rank at the site: it traces, evaluates the stop
// reasons, and on a stop reports it and serves queries until resumed (the
// pass then goes on, or ends with the resume's abort error).
func (h hook) Visit(ev *model.Event, views []*model.RankView) error {
	s := h.s
	j := s.job
	k := s.key(ev)
	st := &stopCtx{ev: ev, views: views, key: k}
	reasons, ids := s.reasons(st)
	if s.Tracing() {
		j.events <- client.TraceLine{Step: ev.Step, Site: ev.Site.Path, Class: ev.Site.Class, Depth: ev.Site.Depth, Tensors: shapesOf(views[0])}
	}
	if len(reasons) == 0 {
		return nil
	}
	b := ev.Batch
	st.info = &client.Stop{Site: ev.Site.Path, Class: ev.Site.Class, Depth: ev.Site.Depth, Layer: ev.Site.Layer, Step: ev.Step,
		Tokens: b.Tokens(), SeqLens: append([]int(nil), b.SeqLens...), Seqs: append([]int(nil), b.Seqs...),
		Reasons: reasons, Breakpoints: ids}
	for _, t := range views[0].Tensors {
		st.info.Tensors = append(st.info.Tensors, t.Name)
	}
	s.mu.Lock()
	st.info.Edits = s.editTexts()
	s.running = false
	s.mu.Unlock()
	j.stop = st
	j.events <- st.info
	for req := range j.reqs {
		if req.resume {
			return req.err
		}
		req.run()
	}
	return client.ErrKilled
}

// reasons evaluates why the pass should stop at st: the interrupt, the
// resume mode, breakpoints and watches (whose hit counts it updates and
// whose temporaries it deletes when they fire). All ranks are waiting in
// Visit, so the hook's state is the session's alone here.
func (s *Session) reasons(st *stopCtx) (reasons []string, ids []int) {
	ev := st.ev
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Step != s.watchStep {
		s.watchStep = ev.Step
		for _, b := range s.bps {
			b.prev = false
		}
	}
	if s.interruptAt >= 0 && st.key >= s.interruptAt {
		reasons = append(reasons, "interrupted")
		s.interruptAt = -1
	}
	if s.mode.wants(ev.Site, st.key) {
		reasons = append(reasons, s.mode.what)
	}
	keep := s.bps[:0]
	for _, b := range s.bps {
		fired := false
		if b.Enabled && b.at[ev.Site.Index] {
			fired = s.fire(b, st, &reasons)
		}
		if fired {
			ids = append(ids, b.ID)
		}
		if !(fired && b.Temporary) {
			keep = append(keep, b)
		}
	}
	if len(keep) < len(s.bps) { // a temporary breakpoint went
		s.bps = keep
		s.reindex()
	}
	if len(reasons) > 0 {
		s.mode = resumeMode{}
	}
	return reasons, ids
}

// fire evaluates breakpoint b at st and records a hit.
func (s *Session) fire(b *Breakpoint, st *stopCtx, reasons *[]string) bool {
	var on []string
	if b.cond != nil {
		for _, v := range st.views {
			if val, ok := b.cond.eval(&rankEnv{st: st, v: v}); ok && val != 0 {
				on = append(on, fmt.Sprint(v.Rank))
			}
		}
	}
	if b.Kind == "watch" {
		now := len(on) > 0
		became := now && !b.prev
		b.prev = now
		if !became {
			return false
		}
		b.Hits++
		if b.Ignore > 0 { // gdb's ignore count: a crossing passed, still a hit
			b.Ignore--
			return false
		}
		*reasons = append(*reasons, fmt.Sprintf("watch %d: %s %s became true on rank%s %s", b.ID, b.Tensor, b.Cond, plural.S(len(on)), strings.Join(on, ",")))
		return true
	}
	if b.cond != nil && len(on) == 0 {
		return false
	}
	b.Hits++
	if b.Ignore > 0 {
		b.Ignore--
		return false
	}
	r := fmt.Sprintf("breakpoint %d", b.ID)
	if b.cond != nil {
		r += fmt.Sprintf(" (%s: true on rank%s %s)", b.Cond, plural.S(len(on)), strings.Join(on, ","))
	}
	*reasons = append(*reasons, r)
	return true
}

// rankEnv evaluates conditions on one rank's view; statistics come from the
// device's Moments over whole tensors, cached per name.
type rankEnv struct {
	st    *stopCtx
	v     *model.RankView
	cache map[string]stats.Stats
}

func (e *rankEnv) stats(name string) (stats.Stats, bool) {
	if s, ok := e.cache[name]; ok {
		return s, true
	}
	var m tensor.Moments
	found := false
	for _, t := range e.v.Tensors {
		if name == "" || t.Name == name {
			m.Merge(moments(e.v, t, 0, rows(t), 0, cols(t)))
			found = true
		}
	}
	if !found {
		return stats.Stats{}, false
	}
	if e.cache == nil {
		e.cache = map[string]stats.Stats{}
	}
	s := stats.FromMoments(m)
	e.cache[name] = s
	return s, true
}

func (e *rankEnv) variable(name string) float64 {
	switch name {
	case "rank":
		return float64(e.v.Rank)
	case "step":
		return float64(e.st.ev.Step)
	case "layer":
		return float64(e.st.ev.Site.Layer)
	}
	return float64(e.st.ev.Batch.Tokens())
}

// rows is the row count of a site tensor seen as [rows, cols] (1 for a
// scalar), cols its column count.
func rows(t model.SiteTensor) int {
	if s := t.Shape(); len(s) > 0 {
		return s[0]
	}
	return 1
}

func cols(t model.SiteTensor) int {
	if s := t.Shape(); len(s) > 0 {
		return tensor.Numel(s[1:])
	}
	return 1
}

// moments reduces rows [r0,r1) × cols [c0,c1) of t where it lives.
func moments(v *model.RankView, t model.SiteTensor, r0, r1, c0, c1 int) tensor.Moments {
	if t.T != nil {
		return v.Device.Moments(t.T, r0, r1, c0, c1)
	}
	return tensor.MomentsF32(hostSlice(t.Host, r0, r1, c0, c1).F32())
}

// toHost copies rows [r0,r1) × cols [c0,c1) of t to a host f32 tensor.
func toHost(v *model.RankView, t model.SiteTensor, r0, r1, c0, c1 int) *tensor.Tensor {
	if t.T != nil {
		return v.Device.ToHost(t.T, r0, r1, c0, c1)
	}
	return hostSlice(t.Host, r0, r1, c0, c1)
}

func hostSlice(h *tensor.Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
	c := h.Cols()
	out := make([]float32, 0, (r1-r0)*(c1-c0))
	for r := r0; r < r1; r++ {
		for k := c0; k < c1; k++ {
			out = append(out, float32(h.At(r*c+k)))
		}
	}
	return tensor.FromF32(out, r1-r0, c1-c0)
}
