package worker

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// wireComm is a worker's backend.Comm. With direct links (peers.go) each
// rank sends its tensor to every other rank of its stage and combines
// what it receives itself (directCollective); through the front's hub
// (Config.Hub, or before the front linked the workers) each collective
// sends the rank's tensor to the front, whose hub sums or concatenates
// them in rank order exactly as the in-process CPU communicator does
// (cpu.Comm), and returns the result. Either way the result is the same
// bits on every rank and equal to cpu.Comm's. An abort (from the front,
// or a peer gone) panics with backend.ErrAborted, as a local collective
// does.
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
	if c.s.direct() {
		return c.s.fromHost(c.s.directCollective(op, c.s.toHost(t)))
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
// output (hidden_states, residual) goes straight to the next stage's
// worker of the same tensor-parallel rank over their direct link, or,
// through the front's hub, to the front, which hands it to that worker
// when it asks for its input.
type wirePipe struct {
	s             *server
	stage, stages int
}

func (p *wirePipe) First() bool { return p.stage == 0 }
func (p *wirePipe) Last() bool  { return p.stage == p.stages-1 }

func (p *wirePipe) Send(r *model.Rank, h, res backend.Tensor) {
	if p.s.direct() {
		p.s.sendPeer(p.s.peers.slot+p.s.world, peerPipe, p.s.toHost(h), p.s.toHost(res))
		return
	}
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
	if p.s.direct() {
		ts := p.s.recvPeer(p.s.peers.slot-p.s.world, peerPipe, 2)
		return p.s.fromHost(ts[0]), p.s.fromHost(ts[1])
	}
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

// direct reports whether the front linked the workers directly (a
// kindPeers message came); until then, and with Config.Hub, collectives
// and stage transfers go through the front.
func (s *server) direct() bool {
	if s.peers == nil {
		return false
	}
	s.peers.mu.Lock()
	defer s.peers.mu.Unlock()
	return s.peers.m != nil
}

// directCollective runs collective op over the direct links of the
// rank's stage with the rank's host f32 tensor mine [rows, cols]: it
// sends mine to every other rank, receives theirs, and combines all in
// rank order. An all-reduce is the element-wise f32 sum
// ((0 + x_0) + x_1) + … + x_{world-1}, in rank order on every rank: the
// same inputs in the same order give the same bits on every rank, and the
// same as cpu.Comm.AllReduceSum (in process) and the front's hub. An
// all-gather concatenates the ranks' columns in rank order. A mismatch of
// shapes between ranks panics with ErrAborted naming the ranks.
func (s *server) directCollective(op byte, mine *tensor.Tensor) *tensor.Tensor {
	world, rank := s.world, s.rank
	base := s.peers.slot - rank // slot of rank 0 of this stage
	pop := peerReduce
	if op == opAllGatherCols {
		pop = peerGather
	}
	for r := range world {
		if r != rank {
			s.sendPeer(base+r, pop, mine)
		}
	}
	vals := make([]*tensor.Tensor, world)
	vals[rank] = mine
	for r := range world {
		if r != rank {
			vals[r] = s.recvPeer(base+r, pop, 1)[0]
		}
	}
	rows, cols := rowsCols(mine.Shape)
	for r, v := range vals {
		vr, vc := rowsCols(v.Shape)
		if v.DType != tensor.F32 || vr != rows || (op == opAllReduceSum && vc != cols) {
			panic(fmt.Errorf("%w: %s: rank %d sent %s %v, rank %d has f32 %v", backend.ErrAborted, kindName(kindCollective), r, v.DType, v.Shape, rank, mine.Shape))
		}
	}
	if op == opAllReduceSum {
		out := tensor.New(tensor.F32, mine.Shape...)
		sum := out.F32()
		for _, v := range vals {
			for i, x := range v.F32() {
				sum[i] += x
			}
		}
		return out
	}
	total := 0
	for _, v := range vals {
		_, c := rowsCols(v.Shape)
		total += c
	}
	out := tensor.New(tensor.F32, rows, total)
	at := 0
	for _, v := range vals {
		_, c := rowsCols(v.Shape)
		for i := range rows {
			copy(out.Data[(i*total+at)*4:(i*total+at+c)*4], v.Data[i*c*4:(i+1)*c*4])
		}
		at += c
	}
	return out
}
