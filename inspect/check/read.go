package check

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"hsdb/engine/bytesize"
	"hsdb/engine/hostmem"
	"hsdb/engine/regfile"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// ValueKind says what a Value node is.
type ValueKind uint8

const (
	// KindScalar is a Python scalar: int (int or *big.Int), float64, bool,
	// string or None (nil).
	KindScalar ValueKind = iota
	// KindTensor is a tensor, contiguous on the host.
	KindTensor
	// KindList is a Python list.
	KindList
	// KindTuple is a Python tuple.
	KindTuple
	// KindDict is a dict or OrderedDict (keys in file order), or the
	// top level of a safetensors file (names in data order).
	KindDict
)

// Value is one node of a capture file's structure: a tensor, a list or tuple
// of Values, a dict, or a scalar.
type Value struct {
	Kind   ValueKind
	Tensor *tensor.Tensor // KindTensor: the tensor, any shape and dtype
	Items  []*Value       // KindList, KindTuple
	Keys   []string       // KindDict: the keys as strings, in file order
	Fields []*Value       // KindDict: the values, parallel to Keys
	Scalar any            // KindScalar
}

// Get returns the dict entry for key, or nil.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != KindDict {
		return nil
	}
	for i, k := range v.Keys {
		if k == key {
			return v.Fields[i]
		}
	}
	return nil
}

// CaptureFile is one capture file as read from disk, before any
// interpretation: its format, the value tree (safetensors files are a dict
// of tensors), safetensors metadata and, for pickles, the globals it names.
type CaptureFile struct {
	Path          string
	Format        string            // "safetensors", "torch.save zip archive (NAME/data.pkl)"
	Root          *Value            // the top-level object
	Metadata      map[string]string // safetensors __metadata__ (nil otherwise)
	PickleGlobals []string          // module.name of every global the pickle named, in first-use order
}

// ReadCaptureFile reads a capture file by its content: a safetensors file
// (8-byte little-endian header length, then a JSON object) or a torch.save
// zip archive (ReadTorch), gzipped or not (SpecForge's .ckpt.gz). Tensors are copied out of the file. Errors wrap
// ErrUnreadable (unknown format, corrupt file: the safetensors package's
// own error is kept in the chain) or ErrForbiddenGlobal, naming the file.
func ReadCaptureFile(path string) (*CaptureFile, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	if st, err := f.Stat(); err == nil {
		if avail, ok := memAvailable(); ok && st.Size() > avail {
			f.Close()
			return nil, limitErr("%s: the file is %s and check holds every tensor of a file at once, but the host has %s available (MemAvailable)",
				path, bytesize.Binary(st.Size()), bytesize.Binary(avail))
		}
	}
	head := make([]byte, 9)
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = head[:n]
	switch {
	case n == 0: // "(starts with )" said nothing
		return nil, fmt.Errorf("%s: %w: the file is empty (0 bytes)", path, ErrUnreadable)
	case n >= 4 && bytes.Equal(head[:4], []byte("PK\x03\x04")):
		return ReadTorch(path)
	case n >= 2 && head[0] == 0x1f && head[1] == 0x8b: // SpecForge's .ckpt.gz: a gzipped torch.save archive
		return ReadTorch(path)
	case n == 9 && head[8] == '{':
		// Laid out as safetensors whatever the length says: an absurd
		// length is the safetensors reader's to name (header too large,
		// beyond the end of the file), not an unknown format.
		return readSafetensorsCapture(path)
	case n >= 2 && head[0] == 0x80:
		return ReadTorch(path) // reports the legacy format
	case n >= 6 && bytes.Equal(head[:6], []byte("\x93NUMPY")):
		// `save TENSOR F.npy` writes these: one array, no layers or
		// input_ids, so nothing check's rules read.
		return nil, fmt.Errorf("%s: %w: a NumPy .npy file (one array, as `save TENSOR F.npy` writes): check reads safetensors and torch.save captures; `save TENSOR F.safetensors` writes one it reads", path, ErrUnreadable)
	}
	if n < 9 { // the 9 bytes read above
		// 8 bytes or fewer cannot tell the formats apart: a safetensors
		// file's length prefix alone (90 01 00 00 00 00 00 00) is no
		// stranger than any other bytes, so name the size, not a format.
		return nil, fmt.Errorf("%s: %w: the file is only %d bytes (% x): too short for a safetensors file (an 8-byte header length, then its JSON header) or a torch.save zip archive; cut short (an interrupted write or copy?)", path, ErrUnreadable, n, head)
	}
	return nil, fmt.Errorf("%s: %w: neither a safetensors file nor a torch.save zip archive (starts with % x)", path, ErrUnreadable, head)
}

// memAvailable is hostmem.Available (a variable for tests).
var memAvailable = hostmem.Available

func readSafetensorsCapture(path string) (*CaptureFile, error) {
	sf, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	defer sf.Close()
	cf := &CaptureFile{Path: path, Format: "safetensors", Root: &Value{Kind: KindDict}, Metadata: sf.Metadata()}
	for _, name := range sf.Names() {
		c, err := sf.Copy(name) // a file cut short while read is an error, not SIGBUS
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
		cf.Root.Keys = append(cf.Root.Keys, name)
		cf.Root.Fields = append(cf.Root.Fields, &Value{Kind: KindTensor, Tensor: c})
	}
	return cf, nil
}

// Structure renders the value tree as indented lines, PyTorch-like: keys,
// list lengths, shapes and dtypes. Runs of list items with the same shape
// and dtype are folded into one line ("[0..11] 12 × tensor [96] f32"); a
// dict lists its first maxStructureKeys keys and counts the rest.
func (cf *CaptureFile) Structure() []string {
	var out []string
	var walk func(v *Value, label, indent string)
	walk = func(v *Value, label, indent string) {
		switch v.Kind {
		case KindTensor:
			out = append(out, fmt.Sprintf("%s%s: tensor %s %s", indent, label, tensor.ShapeString(v.Tensor.Shape), v.Tensor.DType))
		case KindScalar:
			out = append(out, fmt.Sprintf("%s%s: %v", indent, label, v.Scalar))
		case KindDict:
			out = append(out, fmt.Sprintf("%s%s: dict of %d", indent, label, len(v.Keys)))
			for i, k := range v.Keys {
				if i == maxStructureKeys && len(v.Keys) > maxStructureKeys+1 {
					out = append(out, fmt.Sprintf("%s  … %d more keys not listed", indent, len(v.Keys)-i))
					break
				}
				walk(v.Fields[i], fmt.Sprintf("%q", k), indent+"  ")
			}
		case KindList, KindTuple:
			kind := "list"
			if v.Kind == KindTuple {
				kind = "tuple"
			}
			out = append(out, fmt.Sprintf("%s%s: %s of %d", indent, label, kind, len(v.Items)))
			for i := 0; i < len(v.Items); {
				j := i + 1
				for j < len(v.Items) && sameTensorKind(v.Items[i], v.Items[j]) {
					j++
				}
				if j-i > 1 {
					t := v.Items[i].Tensor
					out = append(out, fmt.Sprintf("%s  [%d..%d]: %d × tensor %s %s", indent, i, j-1, j-i, tensor.ShapeString(t.Shape), t.DType))
				} else {
					walk(v.Items[i], fmt.Sprintf("[%d]", i), indent+"  ")
				}
				i = j
			}
		}
	}
	walk(cf.Root, "top", "")
	if len(cf.Metadata) > 0 {
		var kv []string
		for k, v := range cf.Metadata {
			if len(v) > 60 {
				v = v[:57] + "..."
			}
			kv = append(kv, k+"="+v)
		}
		sort.Strings(kv)
		out = append(out, "__metadata__: "+strings.Join(kv, ", "))
	}
	return out
}

// maxStructureKeys is how many keys of one dict Structure lists: a
// capture holds a few; a file of 1.5 million zero-size tensors printed a
// line for each.
const maxStructureKeys = 256

func sameTensorKind(a, b *Value) bool {
	return a.Kind == KindTensor && b.Kind == KindTensor && a.Tensor.DType == b.Tensor.DType && slices.Equal(a.Tensor.Shape, b.Tensor.Shape)
}
