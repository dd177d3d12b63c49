package safetensors

import (
	"fmt"
	"slices"
	"sync/atomic"

	"hsdb/engine/regfile"
	"hsdb/engine/tensor"
)

// File is one opened, validated safetensors file backed by a read-only
// memory mapping. Tensors it returns may alias the mapping: they are
// read-only (writing to their Data faults) and must not be used after
// Close. Truncating the file on disk while it is mapped makes later reads
// of the lost pages fault (SIGBUS): Copy and Detach turn that into
// ErrChanged, and so does a reader that reads under
// debug.SetPanicOnFault and passes the fault's address to ChangedError;
// other reads of aliasing tensors are not guarded (see the package doc). A File is safe for concurrent use by several goroutines,
// except that Close must not race with other calls.
type File struct {
	path      string
	data      []byte // the whole file
	unmap     func() error
	dataStart int64
	infos     []TensorInfo // sorted by offset
	index     map[string]int
	meta      map[string]string
	bytesRead atomic.Int64
	closed    atomic.Bool
}

// Open maps the safetensors file at path and validates its header and
// layout (see parseHeader for the full list of checks). On failure nothing
// stays mapped or open and the error wraps one of the sentinels ErrTooShort,
// ErrHeaderLength, ErrHeaderTooLarge, ErrHeaderJSON, ErrHeaderNotObject,
// ErrTensorEntry, ErrMetadata, ErrDuplicateName, ErrUnknownDType,
// ErrBadShape, ErrSizeMismatch, ErrBadOffsets, ErrOutOfRange, ErrOverlap,
// ErrHole or ErrIncomplete, or an *os.PathError for I/O failures.
func Open(path string) (*File, error) {
	fd, err := regfile.Open(path) // a named pipe is refused, not waited on
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close() // the mapping outlives the descriptor
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s: not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() < 8 {
		return nil, fmt.Errorf("%s: %w: file is %d bytes, need at least the 8-byte header length", path, ErrTooShort, st.Size())
	}
	data, unmap, err := mapFile(fd, st.Size())
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	h, err := parseMapped(path, data)
	if err != nil {
		unmap()
		return nil, err
	}
	f := &File{path: path, data: data, unmap: unmap, dataStart: h.dataStart, infos: h.infos, meta: h.meta}
	f.index = make(map[string]int, len(h.infos))
	for i, ti := range h.infos {
		f.index[ti.Name] = i
	}
	register(data, path)
	return f, nil
}

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

// Names returns the tensor names in the order of their data in the file
// (ascending data_offsets), which for files hsdb or the Python library wrote
// is the order they were written in.
func (f *File) Names() []string {
	out := make([]string, len(f.infos))
	for i, ti := range f.infos {
		out[i] = ti.Name
	}
	return out
}

// Len returns the number of tensors in the file.
func (f *File) Len() int { return len(f.infos) }

// Info returns the header's description of tensor name (a copy the caller
// may modify) and whether the file has it.
func (f *File) Info(name string) (TensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	ti := f.infos[i]
	ti.Shape = slices.Clone(ti.Shape)
	return ti, true
}

// Lookup is Info with an error: ErrNoTensor naming the file, the tensor and
// the closest names in the file when it is missing.
func (f *File) Lookup(name string) (TensorInfo, error) {
	ti, ok := f.Info(name)
	if !ok {
		return ti, noTensorError(f.path, name, f.Names())
	}
	return ti, nil
}

// Metadata returns a copy of the header's __metadata__ (nil when absent).
func (f *File) Metadata() map[string]string {
	if f.meta == nil {
		return nil
	}
	out := make(map[string]string, len(f.meta))
	for k, v := range f.meta {
		out[k] = v
	}
	return out
}

// Tensor returns tensor name with its header shape and dtype. Its Data
// aliases the mapping (zero-copy, read-only) when the tensor's file offset
// is a multiple of the element size, which holds for every file written by
// the Python library or by Write (header padded to 8 bytes); otherwise Data
// is a fresh aligned copy. It adds the tensor's byte size to BytesRead.
// Errors: ErrNoTensor (with the closest names), ErrClosed.
func (f *File) Tensor(name string) (*tensor.Tensor, error) {
	ti, err := f.Lookup(name)
	if err != nil {
		return nil, err
	}
	return f.view(ti, ti.Shape, ti.Offset, ti.Bytes())
}

// RowsView returns rows [a, b) of the first dimension of tensor name, shape
// [b−a, shape[1:]...], reading only those rows' bytes: the result is the
// sub-slice [Offset + a·rowBytes, Offset + b·rowBytes) of the mapping (or an
// aligned copy of it when misaligned, as in Tensor), where rowBytes =
// product(shape[1:]) × element size. Pages of other rows are never touched,
// so a column-parallel rank (which owns a contiguous block of output rows of
// a [out, in] weight, as vLLM's ColumnParallelLinear shards dim 0) loads
// only its shard. It adds (b−a)·rowBytes to BytesRead. Errors: ErrNoTensor,
// ErrRowRange (a scalar, a < 0, a > b or b > shape[0]), ErrClosed.
func (f *File) RowsView(name string, a, b int) (*tensor.Tensor, error) {
	ti, err := f.Lookup(name)
	if err != nil {
		return nil, err
	}
	if len(ti.Shape) == 0 || a < 0 || a > b || b > ti.Shape[0] {
		return nil, fmt.Errorf("%s: tensor %q: %w: rows [%d, %d) of shape %s", f.path, name, ErrRowRange, a, b, tensor.ShapeString(ti.Shape))
	}
	rowBytes := int64(tensor.Numel(ti.Shape[1:]) * ti.DType.Size())
	shape := append([]int{b - a}, ti.Shape[1:]...)
	return f.view(ti, shape, ti.Offset+int64(a)*rowBytes, int64(b-a)*rowBytes)
}

// view returns the n bytes at absolute offset off as a tensor of the given
// shape, aliasing the mapping when aligned, and counts them in BytesRead.
func (f *File) view(ti TensorInfo, shape []int, off, n int64) (*tensor.Tensor, error) {
	if f.closed.Load() {
		return nil, fmt.Errorf("%s: tensor %q: %w", f.path, ti.Name, ErrClosed)
	}
	t := &tensor.Tensor{Shape: shape, DType: ti.DType, Data: f.data[off : off+n : off+n]}
	if !t.Aligned() {
		c := tensor.New(ti.DType, shape...)
		if err := guardedCopy(c.Data, t.Data); err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w: %v", f.path, ti.Name, ErrChanged, err)
		}
		t = c
	}
	f.bytesRead.Add(n)
	return t, nil
}

// BytesRead returns the total size in bytes of all tensors and row ranges
// handed out by Tensor and RowsView so far (a measure of what a load
// touched; the header is not counted).
func (f *File) BytesRead() int64 { return f.bytesRead.Load() }

// Size returns the file's size in bytes.
func (f *File) Size() int64 { return int64(len(f.data)) }

// Close unmaps the file. Tensors that alias the mapping must not be used
// afterwards. Closing twice returns nil.
func (f *File) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	unregister(f.data)
	if err := f.unmap(); err != nil {
		return fmt.Errorf("safetensors: %s: munmap: %w", f.path, err)
	}
	f.data = nil
	return nil
}

// FromBytes validates a safetensors file held in memory (an embedded model)
// as Open does; name stands for the path in messages. Tensors alias data
// where aligned, so data must not change while the File is in use.
func FromBytes(name string, data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%s: %w: %d bytes, need at least the 8-byte header length", name, ErrTooShort, len(data))
	}
	h, err := parseHeader(name, data)
	if err != nil {
		return nil, err
	}
	f := &File{path: name, data: data, unmap: func() error { return nil }, dataStart: h.dataStart, infos: h.infos, meta: h.meta}
	f.index = make(map[string]int, len(h.infos))
	for i, ti := range h.infos {
		f.index[ti.Name] = i
	}
	return f, nil
}
