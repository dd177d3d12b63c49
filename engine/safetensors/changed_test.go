package safetensors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"hsdb/engine/tensor"
)

// writeChanged writes a file of one F32 [256, 256] tensor (values 0, 1,
// 2, ...) and returns its path and the values.
func writeChanged(t *testing.T) (string, []float32) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.safetensors")
	want := make([]float32, 1<<16)
	for i := range want {
		want[i] = float32(i)
	}
	if err := WriteFile(p, []Named{{Name: "w", T: tensor.FromF32(want, 256, 256)}}, nil); err != nil {
		t.Fatal(err)
	}
	return p, want
}

// TestDetach: a tensor that aliases an open file's mapping is copied
// (equal values, other memory), one that does not is returned as it is;
// once the file is cut short, Detach of a view of it is ErrChanged naming
// the file instead of SIGBUS, and ChangedError names the file of an
// address in its mapping (nil for any other address, and after Close).
func TestDetach(t *testing.T) {
	p, want := writeChanged(t)
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	view, err := f.Tensor("w")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Detach(view)
	if err != nil {
		t.Fatal(err)
	}
	if &d.Data[0] == &view.Data[0] {
		t.Fatal("Detach returned the view of the mapping itself")
	}
	if len(d.F32()) != len(want) {
		t.Fatalf("Detach gave %d values, want %d", len(d.F32()), len(want))
	}
	for i, v := range d.F32() {
		if v != want[i] {
			t.Fatalf("element %d = %v, want %v", i, v, want[i])
		}
	}
	if d2, err := Detach(d); err != nil || d2 != d {
		t.Fatalf("Detach of a tensor in memory of its own = %p, %v; want it unchanged", d2, err)
	}
	addr := uintptr(unsafe.Pointer(&view.Data[0]))
	if err := ChangedError(addr); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), p) {
		t.Fatalf("ChangedError(an address in the mapping) = %v, want ErrChanged naming %s", err, p)
	}
	if err := ChangedError(uintptr(unsafe.Pointer(&d.Data[0]))); err != nil {
		t.Fatalf("ChangedError(an address on the heap) = %v, want nil", err)
	}
	if err := os.Truncate(p, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := Detach(view); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "changed on disk") {
		t.Fatalf("Detach after truncation = %v, want ErrChanged naming %s", err, p)
	}
	f.Close()
	if err := ChangedError(addr); err != nil {
		t.Fatalf("ChangedError after Close = %v, want nil", err)
	}
}

// TestHeaderOfFileCutWhileParsed: a file cut short between its mapping
// and the parse of its header is ErrChanged naming it, not SIGBUS.
func TestHeaderOfFileCutWhileParsed(t *testing.T) {
	p, _ := writeChanged(t)
	fd, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	st, _ := fd.Stat()
	data, unmap, err := mapFile(fd, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := parseMapped(p, data); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), p) {
		t.Fatalf("parse of a header cut short = %v, want ErrChanged naming %s", err, p)
	}
}
