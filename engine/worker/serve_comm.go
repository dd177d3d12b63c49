package worker

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// wireComm is a worker's backend.Comm: each collective sends the
// rank's tensor to the front, whose hub sums or concatenates them in rank
// order exactly as the in-process CPU communicator does (cpu.Comm), and
// returns the result. An abort from the front panics with
// backend.ErrAborted, as a local collective does.
type wireComm struct {
	s     *server
	world int
}

func (c *wireComm) Rank() int { return c.s.rank }
func (c *wireComm) Size() int { return c.world }

func (c *wireComm) AllReduceSum(t backend.Tensor) backend.Tensor {
	return c.collective(opAllReduceSum, t)
}

func (c *wireComm) AllGatherCols(t backend.Tensor) backend.Tensor {
	return c.collective(opAllGatherCols, t)
}

func (c *wireComm) collective(op byte, t backend.Tensor) backend.Tensor {
	if c.world == 1 {
		return t
	}
	var e enc
	e.u8(op)
	e.tensor(c.s.toHost(t))
	k, d := c.s.call(kindCollective, &e)
	switch k {
	case kindValues:
		h := d.tensor()
		if d.err != nil {
			c.s.fail(d.err)
		}
		return c.s.fromHost(h)
	case kindAbort:
		panic(fmt.Errorf("%w: %s", backend.ErrAborted, d.str()))
	}
	c.s.fail(fmt.Errorf("protocol: a %s message where a collective's result was expected", kindName(k)))
	return nil
}

// wirePipe is a worker's pipeline link (model.Pipe): its stage's
// output goes to the front, which hands it to the next stage's worker of
// the same tensor-parallel rank when that one asks for its input.
type wirePipe struct {
	s             *server
	stage, stages int
}

func (p *wirePipe) First() bool { return p.stage == 0 }
func (p *wirePipe) Last() bool  { return p.stage == p.stages-1 }

func (p *wirePipe) Send(r *model.Rank, h, res backend.Tensor) {
	var e enc
	for _, t := range []backend.Tensor{h, res} {
		e.tensor(p.s.toHost(t))
	}
	k, d := p.s.call(kindPipeSend, &e)
	switch k {
	case kindResume:
		return
	case kindAbort:
		panic(fmt.Errorf("%w: %s", backend.ErrAborted, d.str()))
	}
	p.s.fail(fmt.Errorf("protocol: a %s message where the pipe's acknowledgement was expected", kindName(k)))
}

func (p *wirePipe) Recv(r *model.Rank) (h, res backend.Tensor) {
	k, d := p.s.call(kindPipeRecv, &enc{})
	switch k {
	case kindPipeData:
		a, b := d.tensor(), d.tensor()
		if d.err != nil {
			p.s.fail(d.err)
		}
		return p.s.fromHost(a), p.s.fromHost(b)
	case kindAbort:
		panic(fmt.Errorf("%w: %s", backend.ErrAborted, d.str()))
	}
	p.s.fail(fmt.Errorf("protocol: a %s message where the previous stage's output was expected", kindName(k)))
	return nil, nil
}

// toHost returns a whole activation as a host f32 tensor of its shape: a
// CPU tensor as it is, a device tensor copied (exact for bf16 and f16).
func (s *server) toHost(t backend.Tensor) *tensor.Tensor {
	if ct, ok := t.(cpu.Tensor); ok && ct.Tensor.DType == tensor.F32 {
		return ct.Tensor
	}
	sh := t.Shape()
	rows, cols := rowsCols(sh)
	h := s.dev.ToHost(t, 0, rows, 0, cols)
	h.Shape = append([]int(nil), sh...)
	return h
}

// fromHost makes a scoped activation of the worker's device from host f32
// values: a CPU tensor wraps them; a device tensor is uploaded in the
// activation dtype and copied into an activation of the step's scope.
func (s *server) fromHost(h *tensor.Tensor) backend.Tensor {
	if _, ok := s.dev.(*cpu.Device); ok {
		return cpu.Tensor{Tensor: h}
	}
	src := h
	if act := s.dev.ActDType(); act != tensor.F32 {
		src = h.Convert(act)
	}
	up := s.dev.Upload(src)
	out := s.dev.Alloc(h.Shape...)
	s.dev.CopyRows(out, 0, up, 0, h.Rows())
	s.dev.Free(up)
	return out
}
