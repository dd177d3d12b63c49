package worker

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/tensor"
)

// hub runs CPU workers' collectives in the front: every rank's tensor
// comes in over its connection and the in-process CPU communicator
// (cpu.Comm: rank-ordered sums, column concatenation) combines them, so a
// world of CPU workers computes exactly what the same world of goroutines
// does. Tensors cross the front (a star): the path is the fallback to the
// workers' direct links (peers.go) for hosts whose workers can reach only
// the front (Config.Hub), not the fast one.
type hub struct {
	g     *backend.Group
	comms []*cpu.Comm
}

func newHub(world int) *hub {
	g := backend.NewGroup(world)
	return &hub{g: g, comms: cpu.NewComms(g)}
}

// do runs collective op for rank with its tensor t [rows, cols] (f32) and
// returns the result; an abort (another rank failed) or a mismatch between
// the ranks' tensors is an error.
func (h *hub) do(rank int, op byte, t *tensor.Tensor) (res *tensor.Tensor, err error) {
	if t.DType != tensor.F32 || len(t.Shape) == 0 {
		return nil, fmt.Errorf("rank %d: a collective on a %s tensor %v: want f32 [rows, cols]", rank, t.DType, t.Shape)
	}
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(error)
			if !ok {
				e = fmt.Errorf("%v", p)
			}
			err = e
		}
	}()
	in := cpu.Tensor{Tensor: t}
	var out backend.Tensor
	switch op {
	case opAllReduceSum:
		out = h.comms[rank].AllReduceSum(in)
	case opAllGatherCols:
		out = h.comms[rank].AllGatherCols(in)
	default:
		return nil, fmt.Errorf("rank %d: unknown collective %d", rank, op)
	}
	return out.(cpu.Tensor).Tensor, nil
}
