package check

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadTorchDuplicateRecord: a torch.save archive holding two records
// of one name (a data/N storage or data.pkl written twice, the second
// different) is refused naming the record. torch.save writes each record
// once and which copy PyTorch's reader finds is not defined; hsdb took the
// first data.pkl and the last storage record, and judged the file valid.
func TestReadTorchDuplicateRecord(t *testing.T) {
	src, err := zip.OpenReader("../../testdata/captures/good_speculators.pt")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, dup := range []string{"good_speculators/data/0", "good_speculators/data.pkl"} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, f := range src.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			copies := [][]byte{b}
			if f.Name == dup {
				copies = append(copies, append(append([]byte{}, b...), 0, 0, 0, 0))
			}
			for _, c := range copies {
				w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
				if err != nil {
					t.Fatal(err)
				}
				w.Write(c)
			}
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "dup.pt")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTorch(p)
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), dup) || !strings.Contains(err.Error(), "twice") {
			t.Errorf("record %s twice: %v, want ErrUnreadable naming it twice", dup, err)
		}
	}
}
