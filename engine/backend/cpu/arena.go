package cpu

import (
	"math"
	"math/bits"
	"os"
	"unsafe"

	"hsdb/engine/backend"
)

// Scoped reuse of op outputs. backend.Device's contract is that PopScope
// frees every op output made since the matching PushScope except those it
// keeps, and that Free ends a tensor's life; the CUDA backend returns that
// memory to its pool. The CPU device does the same for small outputs: their
// float32 buffers go back to per-size free lists and serve later outputs,
// so a decode step allocates (and the garbage collector scans and clears)
// far less. Outputs larger than recycleMax, outputs made outside any scope,
// and kept outputs of the outermost scope are left to the garbage collector,
// as every output was before.
//
// A tensor used after its scope closed would read another output's values;
// with HSDB_CPU_POISON=1 in the environment, recycled buffers are filled
// with NaN so that such a use shows as NaN in every test.

const (
	// recycleMax is the largest output (float32 elements, 1 MiB) whose
	// buffer is reused; larger ones cost little next to their op's work.
	recycleMax   = 1 << recycleClass
	recycleClass = 18
	// retainMax is the most free-list memory (bytes) one device keeps.
	retainMax = 16 << 20
)

// poisonRecycled fills recycled buffers with NaN (HSDB_CPU_POISON=1).
var poisonRecycled = os.Getenv("HSDB_CPU_POISON") == "1"

// arena is a device's open scopes and free buffers. Buffers are full
// slices of capacity 2^class float32; class is bits.Len(n-1) for n
// elements.
type arena struct {
	scopes    [][][]float32 // open scopes (depth = len), each the buffers it owns
	spare     [][][]float32 // emptied owner lists, reused by PushScope
	free      [recycleClass + 1][][]float32
	freeBytes int
}

// output returns n float32 for an op output, zeroed if zero is set (else
// holding stale values the op must overwrite), owned by the innermost scope
// when there is one and n is at most recycleMax.
func (d *Device) output(n int, zero bool) []float32 {
	a := &d.ar
	if len(a.scopes) == 0 || n == 0 || n > recycleMax {
		return make([]float32, n)
	}
	c := bits.Len(uint(n - 1))
	var b []float32
	if fl := a.free[c]; len(fl) > 0 {
		b = fl[len(fl)-1]
		a.free[c] = fl[:len(fl)-1]
		a.freeBytes -= 4 * cap(b)
		if zero {
			clear(b[:n])
		}
	} else {
		b = make([]float32, 1<<c)
	}
	top := len(a.scopes) - 1
	a.scopes[top] = append(a.scopes[top], b)
	return b[:n]
}

// recycle puts buffer b on its free list, or leaves it to the garbage
// collector when the lists hold retainMax bytes.
func (a *arena) recycle(b []float32) {
	if a.freeBytes+4*cap(b) > retainMax {
		return
	}
	if poisonRecycled {
		nan := float32(math.NaN())
		for i := range b {
			b[i] = nan
		}
	}
	c := bits.Len(uint(cap(b) - 1))
	a.free[c] = append(a.free[c], b)
	a.freeBytes += 4 * cap(b)
}

// owner returns the index in bufs of the buffer that holds t's data, or -1.
func owner(bufs [][]float32, t backend.Tensor) int {
	h, ok := t.(Tensor)
	if !ok || h.Tensor == nil || len(h.Data) == 0 {
		return -1
	}
	p := uintptr(unsafe.Pointer(&h.Data[0]))
	for i, b := range bufs {
		start := uintptr(unsafe.Pointer(&b[:1][0]))
		if p >= start && p < start+4*uintptr(cap(b)) {
			return i
		}
	}
	return -1
}

// PushScope opens a scope: small op outputs from now on belong to it and
// are reused once it closes.
func (d *Device) PushScope() {
	a := &d.ar
	var bufs [][]float32
	if n := len(a.spare); n > 0 {
		bufs, a.spare = a.spare[n-1], a.spare[:n-1]
	}
	a.scopes = append(a.scopes, bufs)
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

// close recycles the buffers of a closed scope and keeps its list.
func (a *arena) close(bufs [][]float32) {
	for i, b := range bufs {
		a.recycle(b)
		bufs[i] = nil
	}
	a.spare = append(a.spare, bufs[:0])
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

// freeOutput recycles the buffer of op output t if an open scope owns it
// (Free of an activation); it reports whether one did.
func (a *arena) freeOutput(t backend.Tensor) bool {
	for s := len(a.scopes) - 1; s >= 0; s-- {
		bufs := a.scopes[s]
		if i := owner(bufs, t); i >= 0 {
			a.recycle(bufs[i])
			bufs[i] = bufs[len(bufs)-1]
			bufs[len(bufs)-1] = nil
			a.scopes[s] = bufs[:len(bufs)-1]
			return true
		}
	}
	return false
}
