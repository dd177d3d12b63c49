package worker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"hsdb/engine"
	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// remoteRank is the front's stand-in for one worker: it drives the
// worker's steps (engine.RemoteRank) and serves the debugger's queries at
// a stop through its proxy device.
type remoteRank struct {
	f     *Front
	slot  int // stage × world + rank
	rank  int // tensor-parallel rank within the stage
	stage int
	c     *conn
	host  string
	pid   int
	proc  *process // nil for a worker that joined by itself

	devName  string
	act      tensor.DType
	memory   int64 // last reported bytes in use
	cache    int64 // last reported KV-cache bytes
	report   model.LoadReport
	paths    []string      // the paths of the sites of the worker's model
	peerAddr string        // where its peers link to it
	sites    []*model.Site // the front's site for each of paths (checkSites)
	busy     bool          // a step is running on the worker (guarded by f.intr.mu)

	// call serializes the front's own requests (queries at a stop,
	// memory); steps are driven by the rank's goroutine.
	call sync.Mutex
	mu   sync.Mutex
	dead error // set once the worker failed
	// gen numbers visits: a handle is valid only during the visit that
	// made it (gen equal and open).
	gen  uint64
	open bool
	// openPass and openEv are the pass and site of the open visit: where
	// the worker is while it waits there (for an interrupt).
	openPass *model.Pass
	openEv   *model.Event
	// where the worker last was: the site and step of its last want or
	// visit.
	lastSite string
	lastStep int
	// asking is when the front's request askID (recvQueued) went out,
	// zero when no reply is awaited: what Ctrl-C abandons (abandon.go).
	asking time.Time
	askID  uint64
	// reading is when the step's loop began waiting for the worker's next
	// message, zero while it does anything else (in the hub, in the
	// hook): only a worker the front is reading from can be silent.
	reading time.Time
	// queued are position reports read while the front waited for a
	// query's reply at a stop (recvQueued); the step's loop handles them.
	queued []*dec
}

// load sends the assignment and waits for the worker's report.
func (r *remoteRank) load(tmpl assign) error {
	a := tmpl
	a.Rank, a.Slot, a.Stage = r.rank, r.slot, r.stage
	if r.f.stages != nil {
		a.Layers = r.f.stages[r.stage].String()
	}
	var e enc
	a.enc(&e)
	r.c.timeout = r.f.cfg.Timeout
	if err := r.c.send(kindAssign, &e); err != nil {
		return r.fault(err)
	}
	r.c.limit = maxFrame
	wait := r.f.cfg.LoadTimeout // loading a large checkpoint may take long: by default, until the worker answers or dies
	if wait <= 0 {
		wait = -1
	}
	d, err := r.c.expect(kindLoaded, wait)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, io.EOF) {
			return r.fault(err)
		}
		return fmt.Errorf("%s (pid %d on %s): %w", r.who(), r.pid, r.host, err)
	}
	var l loaded
	if err := l.dec(d); err != nil {
		return r.fault(err)
	}
	r.devName, r.act, r.memory, r.report, r.paths, r.peerAddr = l.Device, l.ActDType, l.Memory, l.Report, l.Sites, l.PeerAddr
	return nil
}

// who names the worker in messages: its rank, and its stage when there
// are several.
func (r *remoteRank) who() string {
	if r.f.pp > 1 {
		return fmt.Sprintf("rank %d of stage %d", r.rank, r.stage)
	}
	return fmt.Sprintf("rank %d", r.rank)
}

// checkSites fails unless every site of the worker's model is one of the
// front's (Bind).
func (r *remoteRank) checkSites() error {
	r.sites = r.sites[:0]
	for _, p := range r.paths {
		st := r.f.sites[p]
		if st == nil {
			return fmt.Errorf("%s (pid %d on %s) has a site %s the front's model lacks: do the hosts see the same model files?", r.who(), r.pid, r.host, p)
		}
		r.sites = append(r.sites, st)
	}
	return nil
}

// failed returns why the worker is gone, or nil.
func (r *remoteRank) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dead
}

// fault marks the worker failed with cause (a broken connection, a
// timeout, a protocol error) and returns the report: rank, host, pid, how
// it ended, its last stderr line and where it was. A worker that is still
// running (hung) is killed.
func (r *remoteRank) fault(cause error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead != nil {
		return r.dead
	}
	r.c.close()
	how := cause.Error()
	var ne net.Error
	var ab abandoned
	switch {
	case errors.As(cause, &ab):
		ab.joined = r.proc == nil
		how = ab.Error()
		r.killLocked()
	case errors.As(cause, &stoppedWorker{}):
		how = stoppedWorker{}.Error()
		r.killLocked()
	case errors.As(cause, &ne) && ne.Timeout():
		how = fmt.Sprintf("stopped answering for %s (hung in a collective or a kernel?): killed", r.f.cfg.Timeout)
		r.killLocked()
	case errors.Is(cause, io.EOF) || errors.Is(cause, syscall.ECONNRESET) || errors.Is(cause, net.ErrClosed) || errors.Is(cause, syscall.EPIPE):
		how = "the worker died"
	}
	if p := r.proc; p != nil {
		select {
		case <-p.exited:
			how += " (" + p.err.Error() + ")"
		case <-time.After(2 * time.Second):
		}
	}
	where := ""
	if r.lastSite != "" {
		where = fmt.Sprintf("; the last site it asked the front about was %s, step %d", r.lastSite, r.lastStep)
	}
	var last string
	if r.proc != nil {
		last = r.proc.stderr.suffix()
	}
	r.dead = fmt.Errorf("%w: %s (pid %d on %s): %s%s%s", engine.ErrWorker, r.who(), r.pid, r.host, how, last, where)
	return r.dead
}

// killLocked kills a spawned worker's process. A worker that joined by
// itself is only disconnected (it ends when it next talks to the front):
// the front never signals a process id a peer reported.
func (r *remoteRank) killLocked() {
	if r.proc != nil {
		r.proc.kill()
	}
}

// kill ends the worker's process (a failed load).
func (r *remoteRank) kill() {
	r.c.close()
	if r.proc != nil {
		r.proc.kill()
	}
}

// quit asks a live worker to end and waits for a spawned one (5 s, then a
// kill).
func (r *remoteRank) quit() {
	if r.failed() == nil {
		r.call.Lock()
		r.c.timeout = time.Second
		r.c.send(kindQuit, &enc{})
		r.call.Unlock()
	}
	r.c.close()
	if p := r.proc; p != nil {
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			p.kill()
			<-p.exited
		}
	}
}

// queryMemory refreshes memory and cache from the worker, quietly keeping
// the last values when it cannot answer.
func (r *remoteRank) queryMemory() {
	if r.failed() != nil {
		return
	}
	r.call.Lock()
	defer r.call.Unlock()
	if err := r.c.send(kindMemory, &enc{}); err != nil {
		r.fault(err)
		return
	}
	k, d, err := r.recvQueued()
	if err == nil && k != kindMemoryReply {
		err = fmt.Errorf("protocol: a %s message where a memory reply was expected", kindName(k))
	}
	if err != nil {
		r.fault(err)
		return
	}
	m, c := d.i64(), d.i64()
	if d.err == nil {
		r.memory, r.cache = m, c
	}
}

// event checks a site path and step from the worker against the step.
func (r *remoteRank) event(site string, step int, b *model.Batch) (*model.Event, error) {
	s := r.f.sites[site]
	if s == nil || step != b.Step {
		return nil, fmt.Errorf("protocol: site %q, step %d in step %d", site, step, b.Step)
	}
	r.mu.Lock()
	r.lastSite, r.lastStep = s.Path, step
	r.mu.Unlock()
	return &model.Event{Site: s, Step: step, Batch: b}, nil
}

// forward runs step b on the worker (see engine.RemoteRank.Forward). A
// panic in the front's hook leaves the worker mid-step: the worker is
// marked failed (the next prefill replaces it) and the panic goes on to
// the engine, which reports it as the rank's internal error.
func (r *remoteRank) forward(pass *model.Pass, b *model.Batch, logits bool) (*tensor.Tensor, error) {
	if err := r.failed(); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			r.fault(fmt.Errorf("the front failed in the middle of a step: %v", p))
			r.killLocked()
			panic(p)
		}
	}()
	t0 := time.Now()
	var e enc
	encBatch(&e, b)
	e.bool(pass.Hook != nil)
	e.bool(logits)
	encFaults(&e, pass.Faults)
	e.i64(int64(r.f.seq.Load()))
	if err := r.sendFiltered(kindStep, &e, pass, b.Step, true); err != nil {
		return nil, r.fault(err)
	}
	defer r.endStep()
	var stopErr error // the hook's error or an abort, returned as it is
	for {
		if err := r.drainPositions(pass, b); err != nil {
			return nil, r.fault(err)
		}
		k, d, err := r.recvStep()
		if err != nil {
			return nil, r.fault(err)
		}
		var reply enc
		rk := kindResume
		filtered := false // the reply carries the site filter (a resume after a visit)
		switch k {
		case kindPosition:
			if err := r.positioned(pass, b, d); err != nil {
				return nil, r.fault(err)
			}
			continue // no reply
		case kindPeerWait: // alive, waiting for a peer: the read's timeout starts again
			if err := r.peerWait(d); err != nil {
				return nil, r.fault(err)
			}
			continue
		case kindWant:
			r.f.wants.Add(1)
			site, step := d.str(), d.int()
			if d.err != nil || pass.Hook == nil {
				return nil, r.fault(fmt.Errorf("protocol: a bad want (%v)", d.err))
			}
			ev, err := r.event(site, step, b)
			if err != nil {
				return nil, r.fault(err)
			}
			rk = kindAnswer
			reply.bool(pass.Hook.Want(ev))
		case kindVisit:
			var v visit
			if err := v.dec(d); err != nil || pass.Hook == nil {
				return nil, r.fault(fmt.Errorf("protocol: a bad visit (%v)", err))
			}
			ev, err := r.event(v.Site, v.Step, b)
			if err != nil {
				return nil, r.fault(err)
			}
			view, err := r.view(&v)
			if err != nil {
				return nil, r.fault(err)
			}
			if err := r.meet(pass, ev, view); err != nil {
				stopErr = err
				rk = kindAbort
				reply.str(err.Error())
			} else {
				filtered = true // the hook's state may have changed at the stop
			}
		case kindCollective:
			op := d.u8()
			t := d.tensor()
			if d.err != nil {
				return nil, r.fault(d.err)
			}
			r.f.hubbed.Add(1)
			res, err := r.f.hub.do(r.rank, op, t)
			if err != nil {
				stopErr = err
				rk = kindAbort
				reply.str(err.Error())
			} else {
				rk = kindValues
				reply.tensor(res)
			}
		case kindPipeSend:
			h, res := d.tensor(), d.tensor()
			if d.err != nil || r.stage+1 >= r.f.pp {
				return nil, r.fault(fmt.Errorf("protocol: a bad pipe send from stage %d of %d (%v)", r.stage, r.f.pp, d.err))
			}
			r.f.hubbed.Add(1)
			select {
			case r.f.pipes[r.stage+1][r.rank] <- [2]*tensor.Tensor{h, res}:
			default:
				return nil, r.fault(fmt.Errorf("protocol: a second pipe send in one step"))
			}
		case kindPipeRecv:
			if r.stage == 0 {
				return nil, r.fault(fmt.Errorf("protocol: stage 0 asked for a previous stage's output"))
			}
			select {
			case x := <-r.f.pipes[r.stage][r.rank]:
				rk = kindPipeData
				reply.tensor(x[0])
				reply.tensor(x[1])
			default:
				stopErr = fmt.Errorf("%s: no output from stage %d in this step", r.who(), r.stage-1)
				rk = kindAbort
				reply.str(stopErr.Error())
			}
		case kindDone:
			t1 := time.Now()
			var m done
			if err := m.dec(d); err != nil {
				return nil, r.fault(err)
			}
			trace("front %s: step sent to done received %.3f ms, decoding the reply %.3f ms", r.who(), ms(t1.Sub(t0)), ms(time.Since(t1)))
			if stopErr != nil {
				return nil, stopErr
			}
			if m.Err != "" {
				if m.Aborted {
					if dead := r.f.deadPeer(r); dead != nil {
						return nil, dead // the worker whose death aborted this one
					}
					return nil, fmt.Errorf("%w: %s: %s", backend.ErrAborted, r.who(), m.Err)
				}
				return nil, fmt.Errorf("%s (worker pid %d on %s)", m.Err, r.pid, r.host)
			}
			if logits && m.Logits == nil {
				return nil, r.fault(errors.New("protocol: a step without its logits"))
			}
			return m.Logits, nil
		default:
			return nil, r.fault(fmt.Errorf("protocol: a %s message in a step", kindName(k)))
		}
		if filtered {
			err = r.sendFiltered(rk, &reply, pass, b.Step, false)
		} else {
			err = r.c.send(rk, &reply)
		}
		if err != nil {
			return nil, r.fault(err)
		}
	}
}

// view builds the rank's view of a visit: device tensors become handles
// served by the worker, host tensors come whole.
func (r *remoteRank) view(v *visit) (*model.RankView, error) {
	r.mu.Lock()
	r.gen++
	gen := r.gen
	r.mu.Unlock()
	view := &model.RankView{Rank: r.rank, World: r.f.world, Device: proxy{r}}
	for i, t := range v.Tensors {
		st := model.SiteTensor{Name: t.Name, Shard: t.Shard, Writable: t.Writable, SumOf: t.SumOf, Attn: t.Attn}
		if t.Host != nil {
			st.Host = t.Host
		} else {
			st.T = handle{r: r, gen: gen, idx: i, shape: t.Shape, dt: t.DType}
		}
		view.Tensors = append(view.Tensors, st)
	}
	next := len(v.Tensors) // frame inputs are numbered after the site's tensors
	for _, f := range v.Frames {
		st := r.f.sites[f.Site]
		if st == nil || len(f.InDTypes) != len(f.Inputs) {
			return nil, fmt.Errorf("protocol: a frame at site %q (known: %v) with %d inputs and %d dtypes", f.Site, st != nil, len(f.Inputs), len(f.InDTypes))
		}
		fr := model.Frame{Site: st, Inputs: f.Inputs}
		for i, shape := range f.Inputs {
			fr.In = append(fr.In, handle{r: r, gen: gen, idx: next, shape: shape, dt: f.InDTypes[i]})
			next++
		}
		view.Frames = append(view.Frames, fr)
	}
	return view, nil
}

// meet joins the other ranks at the site (model.Pass.Meet) with the visit
// open; an abort of the rendezvous becomes the returned error.
func (r *remoteRank) meet(pass *model.Pass, ev *model.Event, view *model.RankView) (err error) {
	r.mu.Lock()
	r.open, r.openPass, r.openEv = true, pass, ev
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.open, r.openPass, r.openEv = false, nil, nil
		r.mu.Unlock()
		if p := recover(); p != nil {
			e, ok := p.(error)
			if !ok {
				panic(p)
			}
			err = e
		}
	}()
	return pass.Meet(r.rank, r.f.world, ev, view)
}
