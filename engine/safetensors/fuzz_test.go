package safetensors

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"hsdb/engine/tensor"
)

// FuzzOpen feeds arbitrary bytes to Open. The seeds are every crafted bad
// file, the Python and crate reference files, and a multi-dtype file;
// `go test` runs them, `go test -fuzz FuzzOpen` mutates them. Open must
// never panic; when it accepts a file, every tensor must be readable with
// exactly product(shape) × size bytes, and the tensors must tile the data
// area (their sizes sum to the file size minus the header).
func FuzzOpen(f *testing.F) {
	for _, c := range badFiles() {
		f.Add(c.data)
	}
	f.Add(pythonSmall)
	f.Add(crateSerialization)
	var b bytes.Buffer
	Write(&b, []Named{
		{"w", tensor.FromF32([]float32{1, 2, 3, 4, 5, 6}, 3, 2)},
		{"ids", tensor.FromI64([]int64{7}, 1)},
		{"s", tensor.New(tensor.BF16)},
		{"e", tensor.New(tensor.U8, 0, 4)},
	}, map[string]string{"format": "pt"})
	f.Add(b.Bytes())

	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.safetensors")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := Open(p)
		if err != nil {
			for _, s := range openSentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("Open error wraps no validation sentinel: %v", err)
		}
		defer st.Close()
		var total int64
		for _, n := range st.Names() {
			x, err := st.Tensor(n)
			if err != nil {
				t.Fatalf("accepted file but Tensor(%q): %v", n, err)
			}
			if len(x.Data) != x.Numel()*x.DType.Size() {
				t.Fatalf("tensor %q: %d bytes for shape %v %s", n, len(x.Data), x.Shape, x.DType)
			}
			total += int64(len(x.Data))
			if len(x.Shape) > 0 {
				if _, err := st.RowsView(n, 0, x.Shape[0]); err != nil {
					t.Fatalf("RowsView(%q, 0, %d): %v", n, x.Shape[0], err)
				}
			}
		}
		if hdr := 8 + int64(len(data[8:8+int(leU64(data))])); total != int64(len(data))-hdr {
			t.Fatalf("tensors cover %d bytes, data area is %d", total, int64(len(data))-hdr)
		}
	})
}

// openSentinels are the errors Open may wrap for a regular file's content.
var openSentinels = []error{ErrTooShort, ErrHeaderLength, ErrHeaderTooLarge, ErrHeaderJSON, ErrHeaderNotObject,
	ErrTensorEntry, ErrMetadata, ErrDuplicateName, ErrUnknownDType, ErrBadShape, ErrSizeMismatch, ErrBadOffsets,
	ErrOutOfRange, ErrOverlap, ErrHole, ErrIncomplete}

func leU64(b []byte) uint64 {
	var n uint64
	for i := 7; i >= 0; i-- {
		n = n<<8 | uint64(b[i])
	}
	return n
}
