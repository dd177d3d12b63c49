package cpu

import (
	"math"
	"math/bits"
	"os"
	"unsafe"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// Scoped reuse of op outputs. backend.Device's contract is that PopScope
// frees every op output made since the matching PushScope except those it
// keeps, and that Free ends a tensor's life; the CUDA backend returns that
// memory to its pool. The CPU device does the same for small outputs: their
// float32 buffers, with their tensor headers, go back to per-size free
// lists and serve later outputs, so a decode step allocates (and the
// garbage collector scans and clears) almost nothing. Outputs larger than
// recycleMax, outputs made outside any scope, and kept outputs of the
// outermost scope are left to the garbage collector, as every output was
// before.
//
// A tensor used after its scope closed would read another output's values;
// with HSDB_CPU_POISON=1 in the environment, closed scopes' buffers are
// filled with NaN and never reused, so that such a use shows as NaN in
// every test.

const (
	// recycleMax is the largest output (float32 elements, 1 MiB) whose
	// buffer is reused; larger ones cost little next to their op's work.
	recycleMax   = 1 << recycleClass
	recycleClass = 18
	// retainMax is the most free-list memory (bytes) one device keeps.
	retainMax = 16 << 20
)

// poisonFreed fills the buffers of closed scopes and freed outputs with
// NaN; reuseFreed puts them on the free lists. HSDB_CPU_POISON=1 sets the
// first and clears the second, so a stale tensor stays NaN.
var (
	poisonFreed = os.Getenv("HSDB_CPU_POISON") == "1"
	reuseFreed  = !poisonFreed
)

// slot is one reusable op output: its tensor header with room for the
// shape, and its buffer of capacity 2^class float32 (class = bits.Len(n-1)
// for n elements).
type slot struct {
	boxed
	data []float32
}

// arena is a device's open scopes and free slots.
type arena struct {
	scopes    [][]*slot // open scopes (depth = len), each the slots it owns
	spare     [][]*slot // emptied owner lists, reused by PushScope
	free      [recycleClass + 1][]*slot
	freeBytes int
}

// newOutput returns an op output tensor [shape] f32 and its values: zeroed
// if zero is set, else stale values the op must overwrite entirely. Outputs
// of at most recycleMax elements made inside a scope belong to the
// innermost scope and reuse a free slot of their size class when there is
// one.
func (d *Device) newOutput(zero bool, shape ...int) (Tensor, []float32) {
	n := tensor.Numel(shape)
	a := &d.ar
	if len(a.scopes) == 0 || n == 0 || n > recycleMax {
		v := make([]float32, n)
		return wrap(v, shape...), v
	}
	c := bits.Len(uint(n - 1))
	var s *slot
	if m := len(a.free[c]); m > 0 {
		// The popped entry is left in the list's spare capacity: the slot
		// is live anyway, and clearing it would cost a write barrier.
		s = a.free[c][m-1]
		a.free[c] = a.free[c][:m-1]
		a.freeBytes -= 4 * cap(s.data)
		if zero {
			clear(s.data[:n])
		}
	} else {
		s = &slot{data: make([]float32, 1<<c)}
		// The header's slices point into the slot for good; reuse only
		// changes their lengths, which stores no pointer (no GC write
		// barrier).
		s.t = tensor.Tensor{Shape: s.shape[:0], DType: tensor.F32, Data: unsafe.Slice((*byte)(unsafe.Pointer(&s.data[0])), 4*cap(s.data))}
	}
	top := len(a.scopes) - 1
	a.scopes[top] = append(a.scopes[top], s)
	v := s.data[:n]
	if len(shape) > len(s.shape) {
		return wrap(v, shape...), v
	}
	k := copy(s.shape[:], shape)
	s.t.Shape = s.t.Shape[:k]
	s.t.Data = s.t.Data[:4*n]
	return Tensor{&s.t}, v
}

// recycle puts slot s on its free list, or leaves it to the garbage
// collector when the lists hold retainMax bytes.
func (a *arena) recycle(s *slot) {
	if poisonFreed {
		nan := float32(math.NaN())
		for i := range s.data {
			s.data[i] = nan
		}
	}
	if !reuseFreed || a.freeBytes+4*cap(s.data) > retainMax {
		return
	}
	c := bits.Len(uint(cap(s.data) - 1))
	a.free[c] = append(a.free[c], s)
	a.freeBytes += 4 * cap(s.data)
}

// owner returns the index in slots of the slot whose buffer holds t's data
// (t is its output or a view of it), or -1.
func owner(slots []*slot, t backend.Tensor) int {
	h, ok := t.(Tensor)
	if !ok || h.Tensor == nil || len(h.Data) == 0 {
		return -1
	}
	p := uintptr(unsafe.Pointer(&h.Data[0]))
	for i, s := range slots {
		start := uintptr(unsafe.Pointer(&s.data[:1][0]))
		if p >= start && p < start+4*uintptr(cap(s.data)) {
			return i
		}
	}
	return -1
}

// PushScope opens a scope: small op outputs from now on belong to it and
// are reused once it closes.
func (d *Device) PushScope() {
	a := &d.ar
	var slots []*slot
	if n := len(a.spare); n > 0 {
		slots, a.spare = a.spare[n-1], a.spare[:n-1]
	}
	a.scopes = append(a.scopes, slots)
}

// PopScope closes the innermost scope: the outputs it owns are reused by
// later ops, except keep (or the outputs they are views of), which move to
// the enclosing scope, or are left to the garbage collector at the
// outermost level. Keeping a tensor the scope does not own does nothing;
// without an open scope PopScope does nothing.
func (d *Device) PopScope(keep ...backend.Tensor) {
	a := &d.ar
	if len(a.scopes) == 0 {
		return
	}
	top := a.scopes[len(a.scopes)-1]
	a.scopes = a.scopes[:len(a.scopes)-1]
	for _, k := range keep {
		i := owner(top, k)
		if i < 0 {
			continue
		}
		if n := len(a.scopes); n > 0 {
			a.scopes[n-1] = append(a.scopes[n-1], top[i])
		}
		top[i] = top[len(top)-1]
		top = top[:len(top)-1]
	}
	a.close(top)
}

// close recycles the slots of a closed scope and keeps its list.
func (a *arena) close(slots []*slot) {
	for i, s := range slots {
		a.recycle(s)
		slots[i] = nil
	}
	a.spare = append(a.spare, slots[:0])
}

// ScopeDepth returns the number of open scopes (the forward driver's
// scopeUnwinder, with UnwindScopes).
func (d *Device) ScopeDepth() int { return len(d.ar.scopes) }

// UnwindScopes closes scopes until depth remain, recycling what they own:
// the forward driver calls it when a step ends early (a stop, an error).
func (d *Device) UnwindScopes(depth int) {
	a := &d.ar
	for len(a.scopes) > max(depth, 0) {
		top := a.scopes[len(a.scopes)-1]
		a.scopes = a.scopes[:len(a.scopes)-1]
		a.close(top)
	}
}

// freeOutput recycles the slot of op output t if an open scope owns it
// (Free of an activation); it reports whether one did.
func (a *arena) freeOutput(t backend.Tensor) bool {
	for d := len(a.scopes) - 1; d >= 0; d-- {
		slots := a.scopes[d]
		if i := owner(slots, t); i >= 0 {
			a.recycle(slots[i])
			slots[i] = slots[len(slots)-1]
			slots[len(slots)-1] = nil
			a.scopes[d] = slots[:len(slots)-1]
			return true
		}
	}
	return false
}
