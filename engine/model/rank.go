package model

import (
	"hsdb/engine/backend"
)

// Pass is the state the ranks of one forward step share: the hook, the
// rendezvous group and the step's batch.
type Pass struct {
	Hook  Hook
	Group *backend.Group
	Batch *Batch
	// Faults are the faults injected into this pass (nil: none); blocks
	// consult them through Rank.Fault.
	Faults Faults
}

// Rank is one tensor-parallel rank running a forward step: its index and the
// world size, its device and communicator, its KV cache, and its call chain.
// Architectures receive a *Rank and emit sites through it. A Rank is used by
// one goroutine.
type Rank struct {
	Index, World int
	Dev          backend.Device
	Comm         backend.Comm
	KV           *Cache
	Pass         *Pass

	frames []frame
}

type frame struct {
	site *Site
	in   [2]backend.Tensor
}

// Enter records that module site was entered with up to two inputs (their
// shapes show in the call chain); pair it with Exit.
func (r *Rank) Enter(site *Site, in ...backend.Tensor) {
	f := frame{site: site}
	copy(f.in[:], in)
	r.frames = append(r.frames, f)
}

// Exit emits site: if the hook wants it, every rank meets here and the hook
// sees the tensors that tensors() returns (called only then, so an unwatched
// site computes nothing extra). Then the site's frame is popped. A Visit
// error panics out of the forward step on every rank.
func (r *Rank) Exit(site *Site, tensors func() []SiteTensor) {
	if p := r.Pass; p != nil && p.Hook != nil {
		ev := &Event{Site: site, Step: p.Batch.Step, Batch: p.Batch}
		if p.Hook.Want(ev) {
			r.visit(ev, tensors)
		}
	}
	if n := len(r.frames); n > 0 && r.frames[n-1].site == site {
		r.frames = r.frames[:n-1]
	}
}

// Leaf is Enter followed by Exit for a module without children.
func (r *Rank) Leaf(site *Site, in backend.Tensor, tensors func() []SiteTensor) {
	r.Enter(site, in)
	r.Exit(site, tensors)
}

func (r *Rank) visit(ev *Event, tensors func() []SiteTensor) {
	view := &RankView{Rank: r.Index, World: r.World, Device: r.Dev, Tensors: tensors()}
	for _, f := range r.frames {
		fr := Frame{Site: f.site}
		for _, t := range f.in {
			if t != nil {
				fr.Inputs = append(fr.Inputs, append([]int(nil), t.Shape()...))
				fr.In = append(fr.In, t)
			}
		}
		view.Frames = append(view.Frames, fr)
	}
	p := r.Pass
	var err error
	if r.World == 1 || p.Group == nil {
		err = p.Hook.Visit(ev, []*RankView{view})
	} else {
		res := p.Group.Exchange(r.Index, view, func(vals []any) any {
			views := make([]*RankView, len(vals))
			for i, v := range vals {
				views[i] = v.(*RankView)
			}
			return p.Hook.Visit(ev, views)
		})
		if res != nil {
			err = res.(error)
		}
	}
	if err != nil {
		panic(&StopError{Err: err})
	}
}

// StopError is the panic value that carries a Hook.Visit error out of the
// forward step; the driver returns Err.
type StopError struct{ Err error }

// Error returns the hook's error message.
func (e *StopError) Error() string { return e.Err.Error() }

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *StopError) Unwrap() error { return e.Err }
