package cpu

import (
	"fmt"

	"hsdb/engine/backend"
)

// Comm is one virtual rank's handle on an in-memory tensor-parallel group
// (backend.Group): collectives exchange host tensors between goroutines.
// Sums are taken in rank order, so results are deterministic.
type Comm struct {
	g    *backend.Group
	rank int
}

// NewComms returns the n per-rank communicators of group g (g.Size() ranks).
func NewComms(g *backend.Group) []*Comm {
	cs := make([]*Comm, g.Size())
	for r := range cs {
		cs[r] = &Comm{g: g, rank: r}
	}
	return cs
}

var _ backend.Comm = (*Comm)(nil)

// Rank returns this rank's index in [0, Size()).
func (c *Comm) Rank() int { return c.rank }

// Size returns the world size.
func (c *Comm) Size() int { return c.g.Size() }

// AllReduceSum returns the rank-ordered sum of t over the ranks, a new
// tensor on every rank.
func (c *Comm) AllReduceSum(t backend.Tensor) backend.Tensor {
	if c.g.Size() == 1 {
		return t
	}
	mine := f32(t)
	res := c.g.Exchange(c.rank, mine, func(vals []any) any {
		sum := make([]float32, len(mine))
		for r, v := range vals {
			x := v.([]float32)
			if len(x) != len(sum) {
				panic(fmt.Errorf("all-reduce: rank %d has %d elements, rank 0 has %d", r, len(x), len(sum)))
			}
			for i, e := range x {
				sum[i] += e
			}
		}
		return sum
	})
	return wrap(append([]float32(nil), res.([]float32)...), host(t).Shape...)
}

// AllGatherCols concatenates every rank's t [rows, cols_r] along columns in
// rank order.
func (c *Comm) AllGatherCols(t backend.Tensor) backend.Tensor {
	if c.g.Size() == 1 {
		return t
	}
	res := c.g.Exchange(c.rank, t, func(vals []any) any {
		ts := make([]backend.Tensor, len(vals))
		for i, v := range vals {
			ts[i] = v.(backend.Tensor)
		}
		return (&Device{name: "cpu"}).ConcatCols(ts...)
	})
	return res.(backend.Tensor)
}
