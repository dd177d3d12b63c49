package capture

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"hsdb/engine/tensor"
)

// This file writes what torch.save writes for a dict of tensors, so that
// torch.load(path, weights_only=True) — and SpecForge's
// OfflineEagle3Dataset, which loads with mmap=True — read hsdb's SpecForge
// samples exactly as their own. The layout follows torch/serialization.py
// (_save) and caffe2/serialize/inline_container.cc (PyTorchStreamWriter):
//
//	archive/data.pkl           the pickle (protocol 2) of the dict
//	archive/.format_version    "1"
//	archive/.storage_alignment "64"
//	archive/byteorder          "little"
//	archive/data/0, data/1 ... each tensor's storage, raw little-endian bytes
//	archive/version            "3\n"
//
// every record stored uncompressed with its data at a multiple of 64 bytes
// (padding in the local header's extra field, as PyTorchStreamWriter does:
// torch maps storages straight from the file). Each tensor in the pickle
// is torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False,
// collections.OrderedDict()) whose storage is a persistent id ('storage',
// torch.<T>Storage, key, 'cpu', numel) — the globals weights_only allows.
//
// It is written here with archive/zip rather than by a library: no Go
// library writes torch.save archives, and the format is small; the zip
// container itself is the standard library's.

// torchAlign is PyTorchStreamWriter's record alignment (kFieldAlignment).
const torchAlign = 64

// TorchEntry is one key of a torch.save dict: a string key and a
// contiguous tensor (F32, BF16, F16 or I64).
type TorchEntry struct {
	Key string
	T   *tensor.Tensor
}

// torchStorage names the storage class torch.save pickles for a dtype.
func torchStorage(dt tensor.DType) (string, error) {
	switch dt {
	case tensor.F32:
		return "FloatStorage", nil
	case tensor.BF16:
		return "BFloat16Storage", nil
	case tensor.F16:
		return "HalfStorage", nil
	case tensor.I64:
		return "LongStorage", nil
	}
	return "", fmt.Errorf("torch.save: no storage class for dtype %s", dt)
}

// TorchPickle returns data.pkl for a dict of entries in order: protocol 2,
// tensors rebuilt by torch._utils._rebuild_tensor_v2 from persistent
// storage ids "0", "1", ... in entry order. Errors: a dtype without a
// storage class.
func TorchPickle(entries []TorchEntry) ([]byte, error) {
	var p pickler
	p.op(0x80, 2) // PROTO 2
	p.op('}')     // EMPTY_DICT
	if len(entries) > 0 {
		p.op('(') // MARK
	}
	for i, e := range entries {
		st, err := torchStorage(e.T.DType)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Key, err)
		}
		p.str(e.Key)
		p.global("torch._utils", "_rebuild_tensor_v2")
		p.op('(') // MARK: the arguments
		// persistent id ('storage', torch.XStorage, key, 'cpu', numel)
		p.op('(')
		p.str("storage")
		p.global("torch", st)
		p.str(fmt.Sprint(i))
		p.str("cpu")
		p.int(e.T.Numel())
		p.op('t') // TUPLE
		p.op('Q') // BINPERSID
		p.int(0)  // storage_offset
		p.ints(e.T.Shape)
		p.ints(contiguousStrides(e.T.Shape))
		p.op(0x89) // NEWFALSE: requires_grad
		p.global("collections", "OrderedDict")
		p.op(')') // EMPTY_TUPLE
		p.op('R') // REDUCE: OrderedDict() = backward_hooks
		p.op('t') // TUPLE
		p.op('R') // REDUCE: _rebuild_tensor_v2(...)
	}
	if len(entries) > 0 {
		p.op('u') // SETITEMS
	}
	p.op('.') // STOP
	return p.b.Bytes(), nil
}

func contiguousStrides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// pickler appends pickle opcodes.
type pickler struct{ b bytes.Buffer }

func (p *pickler) op(b ...byte) { p.b.Write(b) }

func (p *pickler) str(s string) { // BINUNICODE
	p.b.WriteByte('X')
	p.b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(s))))
	p.b.WriteString(s)
}

func (p *pickler) global(mod, name string) { p.b.WriteString("c" + mod + "\n" + name + "\n") }

func (p *pickler) int(v int) {
	switch {
	case v >= 0 && v < 1<<8:
		p.op('K', byte(v)) // BININT1
	case v >= 0 && v < 1<<16:
		p.op('M', byte(v), byte(v>>8)) // BININT2
	case v >= -1<<31 && v < 1<<31:
		p.b.WriteByte('J') // BININT
		p.b.Write(binary.LittleEndian.AppendUint32(nil, uint32(int32(v))))
	default: // LONG1 with 8 bytes, two's complement
		p.op(0x8a, 8)
		p.b.Write(binary.LittleEndian.AppendUint64(nil, uint64(int64(v))))
	}
}

func (p *pickler) ints(vs []int) {
	if len(vs) == 0 {
		p.op(')')
		return
	}
	p.op('(')
	for _, v := range vs {
		p.int(v)
	}
	p.op('t')
}

// WriteTorchSave writes entries as a torch.save zip archive to w, records
// under the directory archive ("archive", as torch.save names it for a
// buffer; torch.load accepts any one top-level name). Errors: a dtype
// without a storage class; w's.
func WriteTorchSave(w io.Writer, archive string, entries []TorchEntry) error {
	pkl, err := TorchPickle(entries)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	var off int64 // where the next local header starts (zip.Writer buffers, so it is counted here)
	put := func(name string, data []byte) error {
		full := archive + "/" + name
		// The local header is 30 bytes + name + extra; pad the extra
		// field so that the data starts at a multiple of torchAlign. An
		// extra field record is a 2-byte id, a 2-byte length and the data
		// (PyTorchStreamWriter uses the id "FB").
		base := off + 30 + int64(len(full)) + 4
		pad := (torchAlign - base%torchAlign) % torchAlign
		extra := make([]byte, 4+pad)
		copy(extra, "FB")
		binary.LittleEndian.PutUint16(extra[2:], uint16(pad))
		fh := &zip.FileHeader{Name: full, Method: zip.Store, CRC32: crc32.ChecksumIEEE(data),
			CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(data)), Extra: extra}
		f, err := zw.CreateRaw(fh)
		if err != nil {
			return err
		}
		off = base + pad + int64(len(data))
		_, err = f.Write(data)
		return err
	}
	if err := put("data.pkl", pkl); err != nil {
		return err
	}
	for _, r := range [][2]string{{".format_version", "1"}, {".storage_alignment", "64"}, {"byteorder", "little"}} {
		if err := put(r[0], []byte(r[1])); err != nil {
			return err
		}
	}
	for i, e := range entries {
		if err := put(fmt.Sprintf("data/%d", i), e.T.Data); err != nil {
			return err
		}
	}
	if err := put("version", []byte("3\n")); err != nil {
		return err
	}
	return zw.Close()
}
