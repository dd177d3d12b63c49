package debug

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

	"hsdb/engine"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

// job is one run of the model in its own goroutine: a prefill and/or decode
// steps. events carries TraceLines, *Stops and the final doneMsg to the
// session's goroutine; reqs carries queries and the resume to a stopped
// Visit.
type job struct {
	events chan any
	reqs   chan request
	stop   *stopCtx // set while stopped (written by the pass, read while it waits)
	next   []int32
	done   client.Done
	// badLogits notes the sequences whose last logits held NaN or Inf.
	badLogits []string
}

type doneMsg struct{ err error }

// request is sent to a stopped pass: a query run on the pass's goroutine
// (where its tensors are valid), or the resume (err non-nil aborts the
// pass with it).
type request struct {
	fn     func()
	resume bool
	err    error
	done   chan struct{}
}

func (r request) run() {
	defer close(r.done)
	r.fn()
}

// Stopped returns the current stop, or nil when no pass is stopped.
func (s *Session) Stopped() *client.Stop {
	if s.job == nil || s.job.stop == nil {
		return nil
	}
	c := *s.job.stop.info
	return &c
}

// StepBatch returns the sequences of the stopped step's batch (`info
// batch`): each one's number, the position of its first token in the step
// and its ids. Error: ErrNotStopped.
func (s *Session) StepBatch() ([]client.StepSeq, error) {
	if s.job == nil || s.job.stop == nil {
		return nil, fmt.Errorf("%w: `run` to a breakpoint first", client.ErrNotStopped)
	}
	b := s.job.stop.ev.Batch
	out := make([]client.StepSeq, len(b.SeqLens))
	for i, n := range b.SeqLens {
		r0 := b.SeqStart(i)
		out[i] = client.StepSeq{Seq: b.Seqs[i], IDs: append([]int32(nil), b.IDs[r0:r0+n]...)}
		if r0 < len(b.Pos) {
			out[i].Pos = int(b.Pos[r0])
		}
	}
	return out, nil
}

// Run starts a forward pass (a prefill) over the batch, aborting a stopped
// one, and returns at the first stop or when the pass ends. Errors:
// ErrNoInput, an injected fault naming a row the batch does not have
// (faultRowsFit), a forward error (device, bad id), never the abort of
// the old pass.
func (s *Session) Run() (*client.Outcome, error) {
	if len(s.batch) == 0 {
		return nil, fmt.Errorf("run: %w: give a batch first (input ids 1,2,3 ; ids 4,5 — or input text \"...\")", client.ErrNoInput)
	}
	for _, f := range s.faults {
		if err := faultRowsFit(f, s.batch); err != nil {
			return nil, fmt.Errorf("run: injected fault %w (inject clear removes it)", err)
		}
	}
	s.Kill()
	s.resetPassEdits()
	for _, o := range s.Observers {
		if c, ok := o.(*capture.Capturer); ok {
			c.StartPass() // the new pass's edits are listed from none: its data too
		}
	}
	return s.noted(s.start(true, 0))
}

// noted adds the partial-load note (LayerSpan.PartialNote), the injected
// faults and a line per rank worker the pass replaced (engine.Engine.
// WorkerReplacements) to the outcome of a command that starts a job.
func (s *Session) noted(o *client.Outcome, err error) (*client.Outcome, error) {
	if o == nil {
		return o, err // replacements wait for the next outcome
	}
	notes := append([]string{s.LoadedLayers().PartialNote(), s.faultNote()}, s.E.WorkerReplacements()...)
	for _, note := range notes {
		if note == "" {
			continue
		}
		if o.Stop != nil {
			o.Stop.Notes = append(o.Stop.Notes, note)
		}
		if o.Done != nil {
			o.Done.Notes = append(o.Done.Notes, note)
		}
	}
	return o, err
}

// Gen runs n decode steps (greedy: each sequence is fed its argmax token),
// stopping at breakpoints inside each. When stopped, the current step is
// finished first and the stopped pass's batch decoded; otherwise decoding
// continues the last completed run, but only while its batch is still the
// session's: gen never starts a pass (that is `run`'s, which resets the
// edits and stops in the prefill). Errors: n < 1, nothing to continue, a
// batch changed by `input` since the last run, a sequence that would pass
// max_position_embeddings.
func (s *Session) Gen(n int) (*client.Outcome, error) {
	if n < 1 {
		return nil, fmt.Errorf("gen %d: want at least one step", n)
	}
	seqs := s.E.Sequences()
	if s.job != nil {
		if st := s.job.stop; st != nil && st.ev.Batch != nil {
			// The stopped step finishes first: each of its sequences then
			// holds its last position + 1 tokens.
			b := st.ev.Batch
			seq := b.SeqOf()
			after := map[int]int{}
			for i, p := range b.Pos {
				after[b.Seqs[seq[i]]] = max(after[b.Seqs[seq[i]]], int(p)+1)
			}
			for q, l := range after {
				if err := genFits(n, q, l, s.E.Dims.MaxPos); err != nil {
					return nil, err
				}
			}
		}
		s.mu.Lock()
		s.genLeft = n
		s.mu.Unlock()
		return s.resume(resumeMode{}, nil)
	}
	if s.nextBorrowed {
		return nil, fmt.Errorf("gen %d: the last `run`'s prefill is gone: `check` and `diff` ran forward passes of their own on the loaded model since, which replaced its sequences; `run` again, then gen %d", n, n)
	}
	if len(s.next) == 0 || len(seqs) == 0 {
		return nil, fmt.Errorf("gen: no completed prefill to continue: `run` first")
	}
	if !slices.EqualFunc(s.batch, s.ranBatch, slices.Equal[[]int32]) { // the same sequences of the same ids
		return nil, fmt.Errorf("gen %d: `input` has changed the batch since the last `run` (which prefilled %s; now %s): `run` the new batch first, then gen %d",
			n, batchSize(s.ranBatch), batchSize(s.batch), n)
	}
	for i, q := range seqs {
		if err := genFits(n, i, len(q), s.E.Dims.MaxPos); err != nil {
			return nil, err
		}
	}
	s.dropAborted() // a decode step aborted last time runs again
	return s.noted(s.start(false, n))
}

// batchSize words a batch's size for messages: "2 sequences, 6 tokens".
func batchSize(b [][]int32) string {
	n := 0
	for _, q := range b {
		n += len(q)
	}
	return plural.N(len(b), "sequence") + ", " + plural.N(n, "token")
}

// genFits says why n decode steps do not fit sequence seq of length tokens
// under max_position_embeddings maxPos (n > maxPos - tokens: no overflow
// for any n).
func genFits(n, seq, tokens, maxPos int) error {
	if maxPos > 0 && n > maxPos-tokens {
		return fmt.Errorf("gen %d: sequence %d has %d tokens and would pass max_position_embeddings %d", n, seq, tokens, maxPos)
	}
	return nil
}

// Continue resumes until the next breakpoint, watch or the end.
func (s *Session) Continue() (*client.Outcome, error) { return s.resume(resumeMode{}, nil) }

// Step resumes until the next site, entering sub-modules.
func (s *Session) Step() (*client.Outcome, error) {
	return s.resumeFromStop(func(st *stopCtx) (resumeMode, error) {
		return resumeMode{kind: "step", what: "step"}, nil
	})
}

// Next resumes until the next site at the current depth or shallower
// (stepping over sub-modules; leaving the enclosing module stops at its
// site).
func (s *Session) Next() (*client.Outcome, error) {
	return s.resumeFromStop(func(st *stopCtx) (resumeMode, error) {
		return resumeMode{kind: "next", depth: st.ev.Site.Depth, what: "next"}, nil
	})
}

// Finish resumes until the enclosing module's site: the module the stopped
// site is a part of returns. Error: the site is outermost.
func (s *Session) Finish() (*client.Outcome, error) {
	return s.resumeFromStop(func(st *stopCtx) (resumeMode, error) {
		p := st.ev.Site.Parent
		if p == nil {
			return resumeMode{}, fmt.Errorf("finish: %s is outermost: nothing encloses it (use continue)", st.ev.Site.Path)
		}
		return resumeMode{kind: "finish", parent: p, what: "finish " + p.Path}, nil
	})
}

// Until resumes until a site matching pattern (or a breakpoint). Errors: a
// bad pattern or one matching no site.
func (s *Session) Until(pattern string) (*client.Outcome, error) {
	sites, err := s.matchSites(pattern)
	if err != nil {
		return nil, err
	}
	at := make([]bool, len(s.E.Tree.Sites))
	for _, st := range sites {
		at[st.Index] = true
	}
	return s.resumeFromStop(func(*stopCtx) (resumeMode, error) {
		return resumeMode{kind: "until", at: at, what: "until " + pattern}, nil
	})
}

func (s *Session) resumeFromStop(mode func(*stopCtx) (resumeMode, error)) (*client.Outcome, error) {
	if s.job == nil || s.job.stop == nil {
		return nil, fmt.Errorf("%w: `run` to a breakpoint first", client.ErrNotStopped)
	}
	m, err := mode(s.job.stop)
	if err != nil {
		return nil, err
	}
	m.from = s.job.stop.key
	return s.resume(m, nil)
}

// resume sets the mode and lets the stopped pass go on, then waits.
func (s *Session) resume(m resumeMode, abort error) (*client.Outcome, error) {
	if s.job == nil || s.job.stop == nil {
		return nil, fmt.Errorf("%w: `run` starts one", client.ErrNotStopped)
	}
	s.mu.Lock()
	s.mode = m
	s.running = true
	s.mu.Unlock()
	s.job.stop = nil
	s.job.reqs <- request{resume: true, err: abort}
	return s.wait()
}

// Kill aborts a stopped pass (its forward call returns ErrKilled) and
// waits for its goroutine to end. It does nothing when no job exists.
func (s *Session) Kill() {
	if s.job == nil {
		return
	}
	if s.job.stop != nil {
		info := s.job.stop.info
		s.killedAt, s.killedStep = fmt.Sprintf("%s (step %d)", info.Site, info.Step), info.Step
		s.resume(resumeMode{}, client.ErrKilled)
	}
	for s.job != nil {
		s.wait()
	}
}

// Interrupt asks a running pass to stop at the next site every rank has
// yet to reach (Ctrl-C); from then until the stop, OnTrace receives no more
// lines. Safe from any goroutine; it reports whether a pass was running.
func (s *Session) Interrupt() bool {
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return false
	}
	s.traceMuted = true
	s.intrPending++
	run := s.runs
	s.mu.Unlock()
	// Ranks in worker processes ask only at the sites the hook's filter
	// named: the engine first has them ask at every site and report how
	// far they got (Passed), then the stop goes after all of them.
	s.E.Interrupt(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.runs != run {
			return // the job this interrupt was for has ended
		}
		s.intrPending--
		s.interruptAt = s.maxSeen + 1
	})
	return true
}

// start launches a job: a prefill of the batch when prefill, then steps
// decode steps.
func (s *Session) start(prefill bool, steps int) (*client.Outcome, error) {
	s.mu.Lock()
	s.maxSeen, s.interruptAt, s.mode, s.genLeft, s.running, s.watchStep, s.traceMuted = -1, -1, resumeMode{}, steps, true, -1, false
	s.runs++
	s.intrPending = 0
	s.mu.Unlock()
	s.killedAt = ""
	j := &job{events: make(chan any), reqs: make(chan request), next: s.next}
	s.job = j
	batch := s.batch
	if prefill {
		s.ranBatch = batch
	}
	go func() {
		err := s.runJob(j, prefill, batch)
		j.events <- doneMsg{err: err}
	}()
	return s.wait()
}

func (s *Session) runJob(j *job, prefill bool, batch [][]int32) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in the forward driver: %v\n%s", p, debug.Stack())
		}
	}()
	h := s.passHook()
	if prefill {
		j.next = nil
		l, err := s.E.Prefill(batch, h, false)
		if err != nil {
			return err
		}
		j.next, j.badLogits = argmax(l)
		j.done.Prefill = true
		j.done.Generated = emptyLists(len(batch))
	} else {
		j.done.Generated = emptyLists(len(j.next))
	}
	for {
		s.mu.Lock()
		n := s.genLeft
		if n > 0 {
			s.genLeft--
		}
		s.mu.Unlock()
		if n <= 0 {
			return nil
		}
		ids := j.next
		before := s.markStep()
		l, err := s.E.Decode(ids, h)
		if err != nil {
			s.abortedStep(before)
			return err
		}
		for i, id := range ids {
			j.done.Generated[i] = append(j.done.Generated[i], id)
		}
		j.done.DecodeSteps++
		j.next, j.badLogits = argmax(l)
	}
}

// emptyLists returns n empty (not nil) token lists.
func emptyLists(n int) [][]int32 {
	out := make([][]int32, n)
	for i := range out {
		out[i] = []int32{}
	}
	return out
}

// wait receives the job's events until a stop or its end.
func (s *Session) wait() (*client.Outcome, error) {
	j := s.job
	for ev := range j.events {
		switch ev := ev.(type) {
		case client.TraceLine:
			s.mu.Lock()
			muted := s.traceMuted
			s.mu.Unlock()
			if s.OnTrace != nil && !muted {
				s.OnTrace(ev)
			}
		case *client.Stop:
			s.frame = 0
			s.mu.Lock()
			s.traceMuted = false
			s.mu.Unlock()
			c := *ev
			return &client.Outcome{Stop: &c}, nil
		case doneMsg:
			s.mu.Lock()
			s.running, s.traceMuted = false, false
			s.mu.Unlock()
			s.job = nil
			s.next, s.nextBorrowed = j.next, false
			if ev.err != nil {
				if errors.Is(ev.err, client.ErrKilled) {
					return nil, nil
				}
				return nil, ev.err
			}
			d := j.done
			d.Next = j.next
			d.Notes = append(d.Notes, j.badLogits...)
			s.mu.Lock()
			if s.mode.kind != "" { // a step, next, finish or until the pass ended before
				d.Notes = append(d.Notes, fmt.Sprintf("%s: the pass ended before reaching it", s.mode.what))
				s.mode = resumeMode{}
			}
			d.Notes = append(d.Notes, s.editTexts()...)
			s.mu.Unlock()
			for _, q := range s.E.Sequences() {
				d.SeqLens = append(d.SeqLens, len(q))
			}
			if s.Tok != nil {
				seqs := s.E.Sequences() // each the prompt, then its generated tokens
				for i, g := range d.Generated {
					q := seqs[i]
					prev := int32(-1)
					if n := len(q) - len(g) - 1; n >= 0 {
						prev = q[n]
					}
					d.GeneratedText = append(d.GeneratedText, s.pieceText(prev, g))
					d.NextText = append(d.NextText, s.pieceText(q[len(q)-1], d.Next[i:i+1]))
				}
			}
			return &client.Outcome{Done: &d}, nil
		}
	}
	return nil, fmt.Errorf("internal error: the job ended without a result")
}

// at runs fn on the stopped pass's goroutine, where the tensors are valid,
// on the frame `frame`/`up`/`down` selected (frameCtx),
// and turns a panic in fn into an error.
func (s *Session) at(fn func(st *stopCtx) error) error { return s.atFrame(fn, true) }

// atStop is at on the stop itself, whichever frame `frame`/`up`/`down`
// selected (bt: the whole call chain).
func (s *Session) atStop(fn func(st *stopCtx) error) error { return s.atFrame(fn, false) }

func (s *Session) atFrame(fn func(st *stopCtx) error, selected bool) error {
	if s.job == nil || s.job.stop == nil {
		return fmt.Errorf("%w: `run` to a breakpoint first", client.ErrNotStopped)
	}
	st := s.job.stop
	if selected && s.frame > 0 {
		st = frameCtx(st, s.frame)
	}
	var err error
	req := request{done: make(chan struct{}), fn: func() {
		defer func() {
			if p := recover(); p != nil {
				if e, ok := p.(error); ok && errors.Is(e, engine.ErrWorker) { // a rank worker died under the query
					err = e
					return
				}
				err = fmt.Errorf("internal error at %s: %v\n%s", st.ev.Site.Path, p, debug.Stack())
			}
		}()
		err = fn(st)
	}}
	s.job.reqs <- req
	<-req.done
	return err
}
