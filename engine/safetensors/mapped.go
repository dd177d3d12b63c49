package safetensors

import (
	"fmt"
	"sync"
	"unsafe"

	"hsdb/engine/tensor"
)

// mapping is the address range [lo, hi) of one open File's memory mapping.
type mapping struct {
	lo, hi uintptr
	path   string
}

// mappings lists the mappings of every open File (FromBytes files are not
// mappings and are not listed), so that Detach can tell a tensor that
// aliases a checkpoint file from one in memory of its own, and
// ChangedError can name the file a faulting address belongs to.
var mappings struct {
	sync.RWMutex
	m []mapping
}

func addrRange(b []byte) (lo, hi uintptr) {
	if len(b) == 0 {
		return 0, 0
	}
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return lo, lo + uintptr(len(b))
}

// register lists data, the mapping of the file at path.
func register(data []byte, path string) {
	lo, hi := addrRange(data)
	if lo == hi {
		return
	}
	mappings.Lock()
	mappings.m = append(mappings.m, mapping{lo, hi, path})
	mappings.Unlock()
}

// unregister drops data from the list before it is unmapped.
func unregister(data []byte) {
	lo, _ := addrRange(data)
	mappings.Lock()
	defer mappings.Unlock()
	for i, m := range mappings.m {
		if m.lo == lo {
			mappings.m = append(mappings.m[:i], mappings.m[i+1:]...)
			return
		}
	}
}

// mappedFile returns the path of the open file whose mapping holds addr.
func mappedFile(addr uintptr) (string, bool) {
	mappings.RLock()
	defer mappings.RUnlock()
	for _, m := range mappings.m {
		if addr >= m.lo && addr < m.hi {
			return m.path, true
		}
	}
	return "", false
}

// Detach returns t with data that does not depend on any file's memory
// mapping: t itself when its Data lies outside every open File's mapping
// (a converted or dequantized copy, an in-memory source), else a copy of
// the tensor made under the fault guard of Copy. A device that keeps the
// host tensors it is given (the CPU backend) holds weights through Detach,
// so that a checkpoint rewritten or cut short after the load changes
// nothing in the session (see the package doc). Errors: ErrChanged naming
// the file, when it is already shorter than when it was opened.
func Detach(t *tensor.Tensor) (*tensor.Tensor, error) {
	lo, _ := addrRange(t.Data)
	if lo == 0 {
		return t, nil
	}
	path, ok := mappedFile(lo)
	if !ok {
		return t, nil
	}
	c := tensor.New(t.DType, t.Shape...)
	if len(c.Data) != len(t.Data) {
		return nil, fmt.Errorf("%s: tensor of shape %s %s holds %d bytes, want %d", path, tensor.ShapeString(t.Shape), t.DType, len(t.Data), len(c.Data))
	}
	if err := guardedCopy(c.Data, t.Data); err != nil {
		return nil, changedError(path, err)
	}
	return c, nil
}

// ChangedError is the error for a memory fault at addr while a reader
// without Copy's guard (a weight load converting a tensor straight from
// the mapping, under debug.SetPanicOnFault) read a tensor: ErrChanged
// naming the file whose mapping holds addr. It returns nil when addr lies
// in no open File's mapping (a fault of some other cause, which the
// caller must not swallow).
func ChangedError(addr uintptr) error {
	path, ok := mappedFile(addr)
	if !ok {
		return nil
	}
	return changedError(path, fmt.Errorf("reading the mapping faulted at %#x: the file is shorter than when it was opened", addr))
}

func changedError(path string, cause error) error {
	return fmt.Errorf("checkpoint %s changed on disk while it was being loaded (%w: %v); load it again", path, ErrChanged, cause)
}
