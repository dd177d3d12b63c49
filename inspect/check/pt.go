package check

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"

	"hsdb/engine/bytesize"
	"hsdb/engine/regfile"
	"hsdb/engine/tensor"
)

// ErrForbiddenGlobal marks a pickle that names a Python global outside the
// reader's allowlist (ReadTorch). Such a file is refused before anything it
// names could be called; hsdb never executes pickled code.
var ErrForbiddenGlobal = errors.New("pickle names a forbidden global")

// ErrUnreadable marks a capture file hsdb cannot read: not a safetensors
// file or a torch.save zip archive, a corrupt archive or pickle, a tensor
// whose storage is too short for its shape and strides.
var ErrUnreadable = errors.New("unreadable capture file")

// torchStorages maps the storage classes torch.save names in its persistent
// ids (torch/storage.py _LegacyStorage subclasses) to dtypes.
var torchStorages = map[string]tensor.DType{
	"FloatStorage":    tensor.F32,
	"DoubleStorage":   tensor.F64,
	"HalfStorage":     tensor.F16,
	"BFloat16Storage": tensor.BF16,
	"LongStorage":     tensor.I64,
	"IntStorage":      tensor.I32,
	"ShortStorage":    tensor.I16,
	"CharStorage":     tensor.I8,
	"ByteStorage":     tensor.U8,
	"BoolStorage":     tensor.Bool,
}

// AllowedPickleGlobals lists the only globals ReadTorch lets a pickle name:
// what torch.save needs to rebuild tensors (torch/_utils.py
// _rebuild_tensor_v2 and _rebuild_parameter, the legacy storage classes)
// and collections.OrderedDict (the backward-hooks argument, and dicts).
// This is a subset of what torch.load(weights_only=True) accepts
// (torch/_weights_only_unpickler.py).
func AllowedPickleGlobals() []string {
	out := []string{"collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_parameter"}
	for n := range torchStorages {
		out = append(out, "torch."+n)
	}
	sort.Strings(out)
	return out
}

// storageClass is what FindClass returns for torch.XStorage: the dtype of a
// storage named in a persistent id.
type storageClass struct{ dtype tensor.DType }

// storage is one rebuilt torch storage: the raw little-endian bytes of
// numel elements of dtype, from the archive's data/KEY record.
type storage struct {
	key   string
	dtype tensor.DType
	data  []byte
}

func (s *storage) numel() int { return len(s.data) / s.dtype.Size() }

// rebuildTensorV2 is torch._utils._rebuild_tensor_v2(storage,
// storage_offset, size, stride, requires_grad, backward_hooks[, metadata]):
// it copies the strided view into a new contiguous host tensor.
type rebuildTensorV2 struct{ b *budget }

// Call rebuilds the tensor (gopickle calls it for REDUCE).
func (r rebuildTensorV2) Call(args ...interface{}) (interface{}, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %d arguments, want at least 4", len(args))
	}
	st, ok := args[0].(*storage)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: first argument is %T, want a storage", args[0])
	}
	off, err := pyInt(args[1])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2 storage_offset: %w", err)
	}
	size, err := pyInts(args[2])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2 size: %w", err)
	}
	stride, err := pyInts(args[3])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2 stride: %w", err)
	}
	return stridedCopy(st, off, size, stride, r.b)
}

// rebuildParameter is torch._utils._rebuild_parameter(data, requires_grad,
// backward_hooks): an nn.Parameter is its data here.
type rebuildParameter struct{}

// Call returns the parameter's data tensor.
func (rebuildParameter) Call(args ...interface{}) (interface{}, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("_rebuild_parameter: no arguments")
	}
	if _, ok := args[0].(*tensor.Tensor); !ok {
		return nil, fmt.Errorf("_rebuild_parameter: data is %T, want a tensor", args[0])
	}
	return args[0], nil
}

// stridedCopy gathers the view (offset, size, stride) of st, in elements as
// torch counts them, into a contiguous row-major tensor. Every index the
// view can address must lie inside the storage.
func stridedCopy(st *storage, off int, size, stride []int, b *budget) (*tensor.Tensor, error) {
	if len(size) != len(stride) {
		return nil, fmt.Errorf("tensor size %v and stride %v differ in rank", size, stride)
	}
	if off < 0 {
		return nil, fmt.Errorf("storage %s: negative storage_offset %d", st.key, off)
	}
	numel := 1
	last := off // the last element the view reaches, computed without overflow
	for i, d := range size {
		if d < 0 || stride[i] < 0 {
			return nil, fmt.Errorf("negative size or stride in %v / %v", size, stride)
		}
		if d > 0 && numel > (1<<40)/d {
			return nil, fmt.Errorf("size %v is too large", size)
		}
		numel *= d
		if d > 1 && stride[i] > 0 {
			if d-1 > (math.MaxInt-last)/stride[i] { // (d-1)·stride would wrap around and point back into the storage
				return nil, fmt.Errorf("storage %s holds %d elements but the tensor of size %v, stride %v at offset %d reaches beyond element %d",
					st.key, st.numel(), size, stride, off, math.MaxInt)
			}
			last += (d - 1) * stride[i]
		}
	}
	if numel > 0 && last >= st.numel() {
		return nil, fmt.Errorf("storage %s holds %d elements but the tensor of size %v, stride %v at offset %d reaches element %d",
			st.key, st.numel(), size, stride, off, last)
	}
	if numel > 64*max(st.numel(), 1<<16) {
		return nil, fmt.Errorf("a view of %d elements over storage %s of %d: refused (an expanded view this large would only exhaust memory)", numel, st.key, st.numel())
	}
	es := st.dtype.Size()
	if b != nil {
		if err := b.takeView(int64(numel)*int64(es), st.key); err != nil {
			return nil, err
		}
	}
	out := tensor.New(st.dtype, size...)
	if numel == 0 {
		return out, nil
	}
	idx := make([]int, len(size))
	for n := range numel {
		src := off
		for i, v := range idx {
			src += v * stride[i]
		}
		copy(out.Data[n*es:(n+1)*es], st.data[src*es:(src+1)*es])
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < size[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out, nil
}

// pyInt converts a pickled Python int to int.
func pyInt(v interface{}) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case *big.Int:
		if x.IsInt64() {
			return int(x.Int64()), nil
		}
		return 0, fmt.Errorf("integer %s out of range", x)
	}
	return 0, fmt.Errorf("%T is not an integer", v)
}

// pyInts converts a pickled tuple (or list) of ints.
func pyInts(v interface{}) ([]int, error) {
	var items []interface{}
	switch x := v.(type) {
	case *types.Tuple:
		items = *x
	case *types.List:
		items = *x
	default:
		return nil, fmt.Errorf("%T is not a tuple of integers", v)
	}
	out := make([]int, len(items))
	for i, it := range items {
		n, err := pyInt(it)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// ReadTorch reads a torch.save file (the zip archive format of PyTorch ≥ 1.6,
// torch/serialization.py _save: ARCHIVE/data.pkl, ARCHIVE/data/KEY per
// storage, ARCHIVE/byteorder) into a Value tree of dicts, lists, tuples,
// scalars and tensors. The pickle's opcodes are first scanned for every
// global they name (scanPickleGlobals); any global outside the allowlist
// (AllowedPickleGlobals) — os.system, builtins.eval, a user class — is
// refused with ErrForbiddenGlobal naming it, before anything is unpickled.
// The pickle is then read with github.com/nlpodyssey/gopickle, whose
// FindClass is held to the same allowlist; nothing in the file is ever
// executed. Tensors honour storage_offset and strides (views of
// one storage, as torch.unbind makes, come out right) and are returned
// contiguous. Errors: ErrForbiddenGlobal; ErrUnreadable (not a zip archive,
// the legacy pre-1.6 format, TorchScript, no data.pkl, a record name
// twice, a big-endian
// archive, a missing or short storage record, a malformed pickle), each
// naming the file.
func ReadTorch(path string) (*CaptureFile, error) {
	zr, err := openTorchZip(path)
	if err != nil {
		if isLegacyTorch(path) {
			return nil, fmt.Errorf("%s: %w: the legacy torch.save format (_use_new_zipfile_serialization=False) is not supported; re-save it with torch.save's defaults", path, ErrUnreadable)
		}
		if errors.Is(err, errCutShort) {
			return nil, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
		}
		if errors.Is(err, ErrLimit) { // a gzip stream expanding past its bound
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, fmt.Errorf("%s: %w: not a torch.save zip archive: %v", path, ErrUnreadable, err)
	}
	defer zr.Close()
	return readTorchArchive(path, zr.Reader, zr.size)
}

// readTorchArchive is ReadTorch on an opened archive of size bytes on disk
// (the fuzz targets feed it archives built in memory).
func readTorchArchive(path string, zr *zip.Reader, size int64) (*CaptureFile, error) {
	b := &budget{recordLimit: size + MaxRecordSlack}
	if avail, ok := memAvailable(); ok && avail < b.recordLimit { // each record is read into memory
		b.recordLimit, b.recordWhy = avail, fmt.Sprintf("the host's %s available, MemAvailable", bytesize.Binary(avail))
	}
	records := map[string]*zip.File{}
	var pkl *zip.File
	for _, f := range zr.File {
		if _, dup := records[f.Name]; dup {
			// torch.save writes each record once; which copy PyTorch's
			// reader finds is not defined.
			return nil, fmt.Errorf("%s: %w: the archive holds the record %s twice (torch.save writes each once)", path, ErrUnreadable, f.Name)
		}
		records[f.Name] = f
		base := f.Name[strings.LastIndex(f.Name, "/")+1:]
		if base == "constants.pkl" {
			return nil, fmt.Errorf("%s: %w: a TorchScript archive (torch.jit.save), not a torch.save file", path, ErrUnreadable)
		}
		if base == "data.pkl" && pkl == nil {
			pkl = f
		}
	}
	if pkl == nil {
		return nil, fmt.Errorf("%s: %w: the zip archive has no data.pkl (not written by torch.save)", path, ErrUnreadable)
	}
	prefix := strings.TrimSuffix(pkl.Name, "data.pkl")
	if bo, ok := records[prefix+"byteorder"]; ok {
		b, err := b.readRecordWithin(bo, 16)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", path, ErrUnreadable, err)
		}
		if s := strings.TrimSpace(string(b)); s != "little" {
			return nil, fmt.Errorf("%s: %w: byteorder is %q; only little-endian archives are supported", path, ErrUnreadable, s)
		}
	}
	if pkl.UncompressedSize64 > MaxPickleBytes {
		return nil, fmt.Errorf("%s: %w", path, limitErr("%s declares %d bytes uncompressed (%d stored); a pickle may hold at most %d MiB",
			pkl.Name, pkl.UncompressedSize64, pkl.CompressedSize64, MaxPickleBytes>>20))
	}
	pdata, err := b.readRecordWithin(pkl, MaxPickleBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrUnreadable, err)
	}
	cf := &CaptureFile{Path: path, Format: "torch.save zip archive (" + strings.TrimSuffix(prefix, "/") + "/data.pkl)"}
	globals, err := scanPickleGlobals(pdata)
	if errors.Is(err, ErrLimit) { // already says ErrUnreadable and which bound
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: data.pkl: %v", path, ErrUnreadable, err)
	}
	allowed := AllowedPickleGlobals()
	var forbidden []string
	for _, g := range globals {
		if !slices.Contains(allowed, g) {
			forbidden = append(forbidden, g)
		}
	}
	if len(forbidden) > 0 {
		return nil, fmt.Errorf("%s: %w %s: refused without unpickling (allowed: %s)", path, ErrForbiddenGlobal,
			strings.Join(forbidden, ", "), strings.Join(allowed, ", "))
	}
	cf.PickleGlobals = globals
	storages := map[string]*storage{}
	u := pickle.NewUnpickler(&deadlineReader{data: pdata, deadline: time.Now().Add(MaxUnpickleTime)})
	u.FindClass = func(module, name string) (interface{}, error) {
		full := module + "." + name
		switch {
		case full == "torch._utils._rebuild_tensor_v2":
			return rebuildTensorV2{b}, nil
		case full == "torch._utils._rebuild_parameter":
			return rebuildParameter{}, nil
		case module == "torch":
			if dt, ok := torchStorages[name]; ok {
				return &storageClass{dt}, nil
			}
		}
		return nil, fmt.Errorf("%w %s (allowed: %s)", ErrForbiddenGlobal, full, strings.Join(AllowedPickleGlobals(), ", "))
	}
	u.PersistentLoad = func(pid interface{}) (interface{}, error) {
		t, ok := pid.(*types.Tuple)
		if !ok || len(*t) < 5 {
			return nil, fmt.Errorf("persistent id %#v is not ('storage', class, key, location, numel)", pid)
		}
		if s, _ := (*t)[0].(string); s != "storage" {
			return nil, fmt.Errorf("persistent id of kind %v, want 'storage'", (*t)[0])
		}
		sc, ok := (*t)[1].(*storageClass)
		if !ok {
			return nil, fmt.Errorf("persistent id names storage class %T", (*t)[1])
		}
		key, ok := (*t)[2].(string)
		if !ok {
			return nil, fmt.Errorf("persistent id storage key %v is not a string", (*t)[2])
		}
		numel, err := pyInt((*t)[4])
		if err != nil || numel < 0 {
			return nil, fmt.Errorf("persistent id numel %v: %v", (*t)[4], err)
		}
		if st, ok := storages[key]; ok {
			return st, nil
		}
		rec, ok := records[prefix+"data/"+key]
		if !ok {
			return nil, fmt.Errorf("storage %s: the archive has no record %sdata/%s", key, prefix, key)
		}
		want := int64(numel) * int64(sc.dtype.Size())
		if int64(rec.UncompressedSize64) < want {
			return nil, fmt.Errorf("storage %s: the record declares %d bytes, want %d (%d × %s)", key, rec.UncompressedSize64, want, numel, sc.dtype)
		}
		data, err := b.readRecordWithin(rec, want)
		if err != nil {
			return nil, fmt.Errorf("storage %s: %w", key, err)
		}
		if int64(len(data)) < want {
			return nil, fmt.Errorf("storage %s: %d bytes, want %d (%d × %s)", key, len(data), want, numel, sc.dtype)
		}
		b.storageBytes += want
		st := &storage{key: key, dtype: sc.dtype, data: data[:want]}
		storages[key] = st
		return st, nil
	}
	raw, err := safeLoad(&u)
	if err == nil {
		err = expandedSize(raw)
	}
	if err != nil {
		if errors.Is(err, ErrForbiddenGlobal) || errors.Is(err, ErrUnreadable) {
			return nil, fmt.Errorf("%s: data.pkl: %w", path, err)
		}
		return nil, fmt.Errorf("%s: %w: data.pkl: %v", path, ErrUnreadable, err)
	}
	root, err := toValue(raw, 0)
	if err != nil {
		if errors.Is(err, ErrForbiddenGlobal) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, fmt.Errorf("%s: %w: %v", path, ErrUnreadable, err)
	}
	cf.Root = root
	return cf, nil
}

// safeLoad runs the unpickler, turning a panic inside gopickle (malformed
// input it does not check) into an error.
func safeLoad(u *pickle.Unpickler) (v interface{}, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("malformed pickle: %v", p)
		}
	}()
	return u.Load()
}

// readRecord reads a zip record, refusing more than limit bytes (a record
// claiming more than its storage needs is not read past that).
func readRecord(f *zip.File, limit int64) ([]byte, error) {
	r, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", f.Name, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", f.Name, err)
	}
	return b, nil
}

// isLegacyTorch reports whether path starts with a pickle (protocol 2)
// followed by torch's legacy magic number 0x1950a86a20f9469cfc6c.
func isLegacyTorch(path string) bool {
	f, err := regfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 16)
	n, _ := io.ReadFull(f, b)
	return n >= 2 && b[0] == 0x80 && bytes.Contains(b[:n], []byte{0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19})
}
