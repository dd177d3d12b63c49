package backend

import (
	"fmt"
	"sync"
)

// Group is an in-process rendezvous of n goroutines acting as the ranks of a
// tensor-parallel group. Exchange is the one primitive: every rank hands in a
// value, the last to arrive combines them (outside the lock, so combine may
// block, as a debugger stop does), and every rank gets the combined result.
// The CPU backend builds its collectives on it and the forward driver its
// site rendezvous (all ranks stop together at a breakpoint).
//
// Abort wakes every waiting rank, which then panics with ErrAborted (wrapped
// with the cause), so one failing rank never leaves the others hanging.
type Group struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	gen     uint64
	arrived int
	vals    []any
	result  any
	err     error
}

// NewGroup returns a group of n ranks.
func NewGroup(n int) *Group {
	g := &Group{n: n, vals: make([]any, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Size returns the number of ranks.
func (g *Group) Size() int { return g.n }

// Exchange blocks until all ranks of the group have called it, then returns
// combine(values in rank order) to every rank; combine runs once, on the last
// rank to arrive. It panics with an error wrapping ErrAborted if the group is
// or becomes aborted.
func (g *Group) Exchange(rank int, v any, combine func(vals []any) any) any {
	g.mu.Lock()
	if g.err != nil {
		err := g.err
		g.mu.Unlock()
		panic(err)
	}
	gen := g.gen
	g.vals[rank] = v
	g.arrived++
	if g.arrived == g.n {
		vals := append([]any(nil), g.vals...)
		g.mu.Unlock()
		var res any
		func() {
			defer func() {
				if p := recover(); p != nil {
					g.Abort(fmt.Errorf("rank %d: %v", rank, p))
					panic(p)
				}
			}()
			res = combine(vals)
		}()
		g.mu.Lock()
		if g.err != nil {
			err := g.err
			g.mu.Unlock()
			panic(err)
		}
		g.result = res
		g.arrived = 0
		g.gen++
		g.cond.Broadcast()
		g.mu.Unlock()
		return res
	}
	for gen == g.gen && g.err == nil {
		g.cond.Wait()
	}
	if gen == g.gen {
		err := g.err
		g.mu.Unlock()
		panic(err)
	}
	res := g.result
	g.mu.Unlock()
	return res
}

// Abort marks the group failed with cause and wakes every waiting rank. The
// first cause wins; later calls do nothing.
func (g *Group) Abort(cause error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = fmt.Errorf("%w: %v", ErrAborted, cause)
		g.cond.Broadcast()
	}
	g.mu.Unlock()
}

// Err returns the abort error, or nil.
func (g *Group) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Reset clears an abort and any half-finished exchange so the group can run
// another forward pass. Call it only when no rank is inside Exchange.
func (g *Group) Reset() {
	g.mu.Lock()
	g.err = nil
	g.arrived = 0
	clear(g.vals)
	g.gen++
	g.mu.Unlock()
}
