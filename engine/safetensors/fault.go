package safetensors

import (
	"errors"
	"fmt"
	"runtime/debug"

	"hsdb/engine/tensor"
)

// ErrChanged: reading a tensor's bytes from the mapping faulted because
// the file was cut short (or rewritten in place, as cp over it does) after
// Open mapped it.
var ErrChanged = errors.New("file changed while read")

// Copy returns tensor name as a tensor of its own, not aliasing the
// mapping, so it stays valid after Close. The copy runs with
// debug.SetPanicOnFault, the runtime's provision for memory-mapped files:
// a page the file no longer has (truncated after Open) gives ErrChanged
// naming the file and tensor instead of killing the process with SIGBUS.
// Tensors that alias the mapping (Tensor, RowsView) have no such guard;
// readers of files another program may rewrite (capture files) use Copy.
// Errors: ErrNoTensor, ErrClosed, ErrChanged.
func (f *File) Copy(name string) (*tensor.Tensor, error) {
	ti, err := f.Lookup(name)
	if err != nil {
		return nil, err
	}
	if f.closed.Load() {
		return nil, fmt.Errorf("%s: tensor %q: %w", f.path, name, ErrClosed)
	}
	c := tensor.New(ti.DType, ti.Shape...)
	if err := guardedCopy(c.Data, f.data[ti.Offset:ti.Offset+ti.Bytes()]); err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w: %v", f.path, name, ErrChanged, err)
	}
	f.bytesRead.Add(ti.Bytes())
	return c, nil
}

// guardedCopy copies src, a slice of a file mapping, into dst, returning an
// error instead of crashing when a page of src faults (SIGBUS past the end
// of a file truncated after it was mapped).
func guardedCopy(dst, src []byte) error {
	if addr, faulted := underFaultGuard(func() { copy(dst, src) }); faulted {
		return fmt.Errorf("reading the mapping faulted at %#x: the file is shorter than when it was opened", addr)
	}
	return nil
}

// parseMapped is parseHeader on a fresh mapping, under the same guard as
// guardedCopy: a file cut short while its header is parsed is ErrChanged
// naming it, not SIGBUS.
func parseMapped(path string, data []byte) (*header, error) {
	var h *header
	var err error
	if addr, faulted := underFaultGuard(func() { h, err = parseHeader(path, data) }); faulted {
		return nil, fmt.Errorf("%s: %w: reading the header faulted at %#x: the file is shorter than when it was opened", path, ErrChanged, addr)
	}
	return h, err
}

// underFaultGuard runs fn with debug.SetPanicOnFault, the runtime's
// provision for memory-mapped files: a fault on a page the file no longer
// has ends fn and is returned as its address and true instead of killing
// the process with SIGBUS. Other panics go on.
func underFaultGuard(fn func()) (addr uintptr, faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fault, ok := r.(interface{ Addr() uintptr })
		if !ok {
			panic(r)
		}
		addr, faulted = fault.Addr(), true
	}()
	fn()
	return 0, false
}
