package debug

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/client"
)

// interventions are the session's edits (`set var`, `patch`): those
// applied in the current pass (listed at every later stop, reset by `run`)
// and the pending ones, applied whenever a pass visits their site and step
// (persistent edits, and patches armed for the next run). They change only
// between commands or while the pass is stopped.
type interventions struct {
	nextID  int
	pass    []*edit
	pending []*edit
	// npending mirrors len(pending) for the hook's Want, which asks at
	// every site of every rank and so avoids the lock when nothing is
	// pending.
	npending atomic.Int32
	// aborted are the edits applied in the last decode step when it ended
	// before its end (`kill` at a stop in it, an edit that no longer
	// applied): `gen` runs the step again, and they are dropped from pass
	// then (dropAborted).
	aborted []*edit
}

// edit is one intervention: its listing and the function that computes the
// new values of each rank's selected rows at a visit.
type edit struct {
	client.Edit
	siteIdx int
	// values returns, for one rank's tensor t, the new values of rows
	// [r0, r1) (all columns) given the old ones; nil leaves the rank
	// untouched. Errors leave every rank untouched (values runs for all
	// ranks before anything is written).
	plan func(st *stopCtx) ([]rankWrite, error)
}

// rankWrite is what one rank gets written: rows [r0, r1) of tensor name
// replaced by data [r1-r0, cols] (f32 on the host).
type rankWrite struct {
	rank   int
	name   string
	r0, r1 int
	data   *tensor.Tensor
}

// write copies w.data into the live device tensor: converted to the
// tensor's dtype, uploaded and copied row by row into place (Device.Upload
// and CopyRows, which every backend has), then the upload is freed.
func write(v *model.RankView, w rankWrite) error {
	t, ok := v.Tensor(w.name)
	if !ok || t.T == nil {
		return fmt.Errorf("internal error: rank %d has no device tensor %s", v.Rank, w.name)
	}
	h := w.data
	if dt := t.T.DType(); dt != tensor.F32 {
		h = h.Convert(dt)
	}
	up := v.Device.Upload(h)
	v.Device.CopyRows(t.T, w.r0, up, 0, w.r1-w.r0)
	v.Device.Free(up)
	return nil
}

// commit writes every rank's planned rows; for a derived sum (SumOf: a
// decoder layer's stream) it writes the new rows into the first addend
// (hidden_states) and zeros the others (residual), so the pass's next sum
// of the pair is exactly the edited value. An edit of an addend makes the
// sum again in the edited rows, so that the stop shows the stream the
// pass goes on with.
func commit(st *stopCtx, ws []rankWrite) error {
	for _, w := range ws {
		v := st.views[w.rank]
		t, _ := v.Tensor(w.name)
		for i, name := range t.SumOf {
			d := w.data
			if i > 0 {
				d = tensor.FromF32(make([]float32, d.Numel()), d.Shape...)
			}
			if err := write(v, rankWrite{rank: w.rank, name: name, r0: w.r0, r1: w.r1, data: d}); err != nil {
				return err
			}
		}
		if err := write(v, w); err != nil {
			return err
		}
		if err := resum(v, w); err != nil {
			return err
		}
	}
	return nil
}

// resum rewrites rows [w.r0, w.r1) of every derived sum at the site that
// has w.name as an addend (the stream of a decoder layer whose
// hidden_states or residual was edited) as the sum of its addends' rows,
// added in the order SumOf names them, in f32.
func resum(v *model.RankView, w rankWrite) error {
	for _, u := range v.Tensors {
		if u.T == nil || !slices.Contains(u.SumOf, w.name) {
			continue
		}
		var sum *tensor.Tensor
		for _, name := range u.SumOf {
			a, ok := v.Tensor(name)
			if !ok || a.T == nil {
				return fmt.Errorf("internal error: rank %d has no device tensor %s (an addend of %s)", v.Rank, name, u.Name)
			}
			h := v.Device.ToHost(a.T, w.r0, w.r1, 0, cols(a))
			if sum == nil {
				sum = h
				continue
			}
			x, y := sum.F32(), h.F32()
			if len(x) != len(y) {
				return fmt.Errorf("internal error: rank %d: %s rows of %d values, %s of %d", v.Rank, u.SumOf[0], len(x), name, len(y))
			}
			for i := range x {
				x[i] += y[i]
			}
		}
		if err := write(v, rankWrite{rank: v.Rank, name: u.Name, r0: w.r0, r1: w.r1, data: sum}); err != nil {
			return err
		}
	}
	return nil
}

// checkWritable returns ErrConsumed unless an edit of every rank's t
// reaches the pass.
func checkWritable(st *stopCtx, name string) error {
	for _, v := range st.views {
		t, ok := v.Tensor(name)
		if !ok {
			return fmt.Errorf("%w: %s shows no %q", client.ErrNoTensor, st.ev.Site.Path, name)
		}
		if t.T == nil || !(t.Writable || len(t.SumOf) > 0) {
			var w []string
			for _, x := range v.Tensors {
				if x.Writable || len(x.SumOf) > 0 {
					w = append(w, x.Name)
				}
			}
			hint := "nothing at this site can be edited"
			if len(w) > 0 {
				hint = strings.Join(w, ", ") + " can be edited here"
			}
			how := "edit a tensor where it is made (a module's input is the output of the site before it)"
			if layer, ok := strings.CutSuffix(st.ev.Site.Path, ".mlp.gate"); ok {
				// The router's choices are made and used inside the MoE
				// block before this stop (as in vLLM's fused MoE):
				// what routes differently is the gate's input.
				how = fmt.Sprintf("the router's choices follow from its input: edit %s.post_attention_layernorm's hidden_states (the gate's input), or `inject router-softmax` / `inject router-no-bias` to route otherwise", layer)
			}
			return fmt.Errorf("%w: %s at %s was read by the pass before this stop (or is a copy made for the site), so an edit would change nothing downstream; %s — %s",
				client.ErrConsumed, name, st.ev.Site.Path, hint, how)
		}
	}
	return nil
}

// parseOp checks an edit's operator.
func parseOp(op string, v float64) error {
	switch op {
	case "=", "*", "+", "-":
		return nil
	case "/":
		if v == 0 {
			return fmt.Errorf("division by 0")
		}
		return nil
	}
	return fmt.Errorf("operator %q: want =, *, +, - or /", op)
}

func applyOp(op string, x, v float64) float64 {
	switch op {
	case "*":
		return x * v
	case "+":
		return x + v
	case "-":
		return x - v
	case "/":
		return x / v
	}
	return v
}

// editText describes an edit in one line, as listings and manifests show it.
func editText(site string, step int, tensor string, rows, cols client.Range, rank int, what string) string {
	on := "every rank"
	if rank >= 0 {
		on = fmt.Sprintf("rank %d", rank)
	}
	return fmt.Sprintf("%s %s[%d:%d, %d:%d] %s (step %d, %s)", site, tensor, rows.Lo, rows.Hi, cols.Lo, cols.Hi, what, step, on)
}

// opPlan is the plan of `set var`: resolve rows and columns against the
// tensor at the visit, check the operator fits its sharding, compute each
// rank's new rows.
func (s *Session) opPlan(req client.EditRequest, e *edit) func(st *stopCtx) ([]rankWrite, error) {
	return func(st *stopCtx) ([]rankWrite, error) {
		if err := checkWritable(st, req.Tensor); err != nil {
			return nil, err
		}
		l, err := s.locate(st, req.Tensor, req.Slice)
		if err != nil {
			return nil, err
		}
		rr := l.rows
		if req.HasIndex {
			r, err := req.Index.Rows.Resolve(l.rows.Hi-l.rows.Lo, "row")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", req.Tensor, err)
			}
			rr = client.Range{Lo: r.Lo + l.rows.Lo, Hi: r.Hi + l.rows.Lo}
		}
		p0 := l.parts[0]
		full := cols(p0)
		if p0.Shard.Kind == model.Sharded {
			full = p0.Shard.Full
		}
		cr := client.Range{Lo: 0, Hi: full}
		if req.HasIndex {
			if cr, err = req.Index.Cols.Resolve(full, "column"); err != nil {
				return nil, fmt.Errorf("%s: %w", req.Tensor, err)
			}
		}
		if l.kind == model.Partial && req.Slice.Rank < 0 && req.Op != "*" && req.Op != "/" {
			return nil, fmt.Errorf("%s: a partial sum's full value is the sum over ranks: `%s` on every rank would apply it %d times; give --rank R, or scale with * or /", req.Tensor, req.Op, len(l.parts))
		}
		e.Rows, e.Cols = rr, cr
		var ws []rankWrite
		for r, t := range l.parts {
			if req.Slice.Rank >= 0 && r != req.Slice.Rank {
				continue
			}
			c0, c1, off := cr.Lo, cr.Hi, 0
			if t.Shard.Kind == model.Sharded {
				c0, c1, off = max(c0, t.Shard.Start), min(c1, t.Shard.End), t.Shard.Start
				if c0 >= c1 {
					continue
				}
			}
			n := cols(t)
			h := toHost(st.views[r], t, rr.Lo, rr.Hi, 0, n)
			v := h.F32()
			for i := 0; i < rr.Hi-rr.Lo; i++ {
				for c := c0 - off; c < c1-off; c++ {
					v[i*n+c] = float32(applyOp(req.Op, float64(v[i*n+c]), req.Value))
				}
			}
			ws = append(ws, rankWrite{rank: r, name: req.Tensor, r0: rr.Lo, r1: rr.Hi, data: tensor.FromF32(v, rr.Hi-rr.Lo, n)})
		}
		if len(ws) == 0 {
			return nil, fmt.Errorf("%s: columns %d:%d are held by no rank selected", req.Tensor, cr.Lo, cr.Hi)
		}
		return ws, nil
	}
}

// valueText renders an edit's operator and value: "= 0", "* 0.5".
func valueText(op string, v float64) string {
	s := fmt.Sprint(v)
	if math.IsNaN(v) {
		s = "nan"
	}
	return op + " " + s
}

// SetVar edits a tensor of the stopped site (see client.EditRequest).
func (s *Session) SetVar(req client.EditRequest) (client.Edit, error) {
	if err := parseOp(req.Op, req.Value); err != nil {
		return client.Edit{}, err
	}
	shown := req.Value
	if req.Op == "=" {
		// What is written is the float32 of the value (1e39 is +Inf,
		// 1e-46 is 0): the listing and the manifest say that, not the
		// number typed.
		shown = float64(float32(req.Value))
	}
	e := &edit{Edit: client.Edit{Tensor: req.Tensor, Rank: req.Slice.Rank, What: valueText(req.Op, shown), Persist: req.Persist}}
	e.plan = s.opPlan(req, e)
	return s.applyNow(e)
}

// revisiter is an observer that records a site again after an edit at
// the stop changed its tensors (capture.Capturer.Revisit).
type revisiter interface {
	Revisit(ev *model.Event, ranks []*model.RankView) error
}

// applyNow applies e at the stop and records it.
func (s *Session) applyNow(e *edit) (client.Edit, error) {
	err := s.at(func(st *stopCtx) error {
		ws, err := e.plan(st)
		if err != nil {
			return err
		}
		e.Site, e.Step, e.siteIdx = st.ev.Site.Path, st.ev.Step, st.ev.Site.Index
		e.Text = editText(e.Site, e.Step, e.Tensor, e.Rows, e.Cols, e.Rank, e.What)
		if err := commit(st, ws); err != nil {
			return err
		}
		// The observers saw the site before the stop: captures record
		// the edited tensors again (what the pass goes on with).
		for _, o := range s.Observers {
			if r, ok := o.(revisiter); ok {
				if err := r.Revisit(st.ev, st.views); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return client.Edit{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iv.nextID++
	e.ID, e.Applied = s.iv.nextID, 1
	if e.Persist {
		e.Text += " persistent"
		s.iv.pending = append(s.iv.pending, e)
		s.iv.npending.Store(int32(len(s.iv.pending)))
	}
	s.iv.pass = append(s.iv.pass, e)
	s.job.stop.info.Edits = s.editTexts()
	return e.Edit, nil
}

// editTexts lists the current pass's edits (s.mu held).
func (s *Session) editTexts() []string {
	var out []string
	for _, e := range s.iv.pass {
		out = append(out, fmt.Sprintf("edit %d: %s", e.ID, e.Text))
	}
	return out
}

// PassEdits returns the descriptions of the edits applied in the current
// or last pass (for a dump's manifest).
func (s *Session) PassEdits() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.editTexts()
}

// Edits lists the current pass's edits, then pending ones not applied in
// it.
func (s *Session) Edits() []client.Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []client.Edit{}
	for _, e := range s.iv.pass {
		out = append(out, e.Edit)
	}
	for _, e := range s.iv.pending {
		if !slices.Contains(s.iv.pass, e) {
			out = append(out, e.Edit)
		}
	}
	return out
}

// DeleteEdits forgets edits ids, or all of them.
func (s *Session) DeleteEdits(ids ...int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		found := false
		for _, e := range append(slices.Clone(s.iv.pass), s.iv.pending...) {
			found = found || e.ID == id
		}
		if !found {
			return fmt.Errorf("delete edits: no edit %d (info edits lists them)", id)
		}
	}
	keep := func(es []*edit) []*edit {
		return slices.DeleteFunc(es, func(e *edit) bool { return len(ids) == 0 || slices.Contains(ids, e.ID) })
	}
	s.iv.pass, s.iv.pending = keep(s.iv.pass), keep(s.iv.pending)
	s.iv.npending.Store(int32(len(s.iv.pending)))
	return nil
}

// resetPassEdits starts a new pass's list (run): pending edits stay.
func (s *Session) resetPassEdits() {
	s.mu.Lock()
	s.iv.pass, s.iv.aborted = nil, nil
	s.mu.Unlock()
}

// markStep notes, before a decode step, where its edits begin in the
// pass's list; abortedStep, after the step failed, that they belong to an
// aborted attempt.
func (s *Session) markStep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.iv.pass)
}

func (s *Session) abortedStep(before int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if before <= len(s.iv.pass) {
		s.iv.aborted = slices.Clone(s.iv.pass[before:])
	}
}

// dropAborted forgets the edits applied in an aborted decode step, when
// `gen` runs that step again: its values are gone with it (the captures
// roll back its rows, capture.Capturer), so a dump's manifest, `info
// edits` and the end of the pass no longer list an edit the data does not
// hold (a `set var` at the killed stop was listed as held by values it
// never touched), and a persistent edit applied again in the new attempt
// is listed and counted once. A persistent one stays pending.
func (s *Session) dropAborted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.iv.aborted {
		if i := slices.Index(s.iv.pass, e); i >= 0 { // `delete edits` may have forgotten it since
			s.iv.pass = slices.Delete(slices.Clone(s.iv.pass), i, i+1)
			if e.Applied > 0 {
				e.Applied--
			}
		}
	}
	s.iv.aborted = nil
}

// wantsEdit reports whether a pending edit is due at ev (safe from the
// rank goroutines: it takes s.mu when something is pending).
func (s *Session) wantsEdit(ev *model.Event) bool {
	if s.iv.npending.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.iv.pending {
		if e.siteIdx == ev.Site.Index && e.Step == ev.Step {
			return true
		}
	}
	return false
}

// applyPending applies the pending edits due at ev, before observers and
// breakpoints see the site. An edit that no longer fits (another batch)
// stops the pass with its error.
func (s *Session) applyPending(ev *model.Event, views []*model.RankView) error {
	s.mu.Lock()
	var due []*edit
	for _, e := range s.iv.pending {
		if e.siteIdx == ev.Site.Index && e.Step == ev.Step {
			due = append(due, e)
		}
	}
	s.mu.Unlock()
	st := &stopCtx{ev: ev, views: views}
	for _, e := range due {
		ws, err := e.plan(st)
		if err != nil {
			return fmt.Errorf("edit %d (%s) no longer applies: %w (`delete edits %d` forgets it)", e.ID, e.Text, err, e.ID)
		}
		if err := commit(st, ws); err != nil {
			return err
		}
		s.mu.Lock()
		e.Applied++
		if e.Armed {
			e.Armed = false
			e.Text = strings.TrimSuffix(e.Text, " armed")
			s.iv.pending = slices.DeleteFunc(s.iv.pending, func(x *edit) bool { return x == e })
			s.iv.npending.Store(int32(len(s.iv.pending)))
		}
		s.iv.pass = append(s.iv.pass, e)
		s.mu.Unlock()
	}
	return nil
}
