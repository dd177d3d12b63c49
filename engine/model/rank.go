package model

import (
	"hsdb/engine/backend"
)

// Pass is the state the ranks of one forward step share: the hook, the
// rendezvous group and the step's batch.
type Pass struct {
	Hook  Hook           // asked at every site (nil: none)
	Group *backend.Group // where the ranks meet to call Hook.Visit once
	Batch *Batch         // the step's flattened token batch
	// Faults are the faults injected into this pass (nil: none); blocks
	// consult them through Rank.Fault.
	Faults Faults
}

// Rank is one tensor-parallel rank running a forward step: its index and the
// world size, its device and communicator, its KV cache, and its call chain.
// Architectures receive a *Rank and emit sites through it. A Rank is used by
// one goroutine.
type Rank struct {
	Index, World int            // this rank, 0 .. World-1, of World tensor-parallel ranks
	Dev          backend.Device // the device the rank's weights and activations live on
	Comm         backend.Comm   // the rank's collectives (all-reduce, all-gather)
	KV           *Cache         // the rank's KV cache, one per decoder layer
	Pass         *Pass          // the step being run
	// Pipe, when set, makes this rank one pipeline stage's: it receives
	// the previous stage's hidden_states and residual instead of embedding
	// the tokens, and sends its last layer's pair on instead of running
	// the final norm and head (see Pipe).
	Pipe Pipe

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

// Leave pops site's frame without emitting the site: a pipeline stage
// that hands its output on before the module returns (the module's site
// belongs to the stage that finishes it).
func (r *Rank) Leave(site *Site) {
	if n := len(r.frames); n > 0 && r.frames[n-1].site == site {
		r.frames = r.frames[:n-1]
	}
}

// Pipe connects one pipeline stage of a rank to its neighbours (vLLM's
// pipeline parallelism: decoder layers split into consecutive stages, each
// a tensor-parallel group; the IntermediateTensors hidden_states and
// residual [tokens, hidden] pass from a stage to the next, between ranks
// of the same tensor-parallel index).
type Pipe interface {
	// First reports whether the stage embeds the tokens; Last whether it
	// runs the final norm and the LM head.
	First() bool
	Last() bool
	// Recv returns the previous stage's hidden_states and residual on r's
	// device, as scoped activations.
	Recv(r *Rank) (h, res backend.Tensor)
	// Send hands the stage's hidden_states and residual to the next stage.
	Send(r *Rank, h, res backend.Tensor)
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
	if err := r.Pass.Meet(r.Index, r.World, ev, view); err != nil {
		panic(&StopError{Err: err})
	}
}

// Meet is one rank's arrival at a wanted site: with World 1 or no Group the
// hook visits this view alone; otherwise the rank waits in Group until every
// rank has arrived, the last one calls Hook.Visit with all views in rank
// order, and every rank gets its error. A rank whose forward pass runs in a
// worker process meets here through its front-side stand-in
// (engine/worker). It panics with ErrAborted when the group is aborted.
func (p *Pass) Meet(rank, world int, ev *Event, view *RankView) error {
	if world == 1 || p.Group == nil {
		return p.Hook.Visit(ev, []*RankView{view})
	}
	res := p.Group.Exchange(rank, view, func(vals []any) any {
		views := make([]*RankView, len(vals))
		for i, v := range vals {
			views[i] = v.(*RankView)
		}
		return p.Hook.Visit(ev, views)
	})
	if res != nil {
		return res.(error)
	}
	return nil
}

// StopError is the panic value that carries a Hook.Visit error out of the
// forward step; the driver returns Err.
type StopError struct{ Err error }

// Error returns the hook's error message.
func (e *StopError) Error() string { return e.Err.Error() }

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *StopError) Unwrap() error { return e.Err }
