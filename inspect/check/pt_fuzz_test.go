package check

import (
	"archive/zip"
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadTorch mutates the pickles of the capture fixtures: ReadTorch
// must return a tree or an error wrapping ErrUnreadable or
// ErrForbiddenGlobal, never panic or hang. The seeds run with go test.
func FuzzReadTorch(f *testing.F) {
	storages := map[string][]byte{}
	for _, name := range []string{"per_token_rows.pt", "good_speculators_bf16.pt", "evil_global.pt"} {
		zr, err := zip.OpenReader(filepath.Join(capturesDir, name))
		if err != nil {
			f.Fatal(err)
		}
		for _, zf := range zr.File {
			b, err := readRecord(zf, 1<<24)
			if err != nil {
				f.Fatal(err)
			}
			base := zf.Name[strings.Index(zf.Name, "/")+1:]
			if base == "data.pkl" {
				f.Add(b)
			} else if strings.HasPrefix(base, "data/") {
				storages[strings.TrimPrefix(base, "data/")] = b
			}
		}
		zr.Close()
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, pkl []byte) {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create("a/data.pkl")
		w.Write(pkl)
		for k, b := range storages {
			w, _ := zw.Create("a/data/" + k)
			w.Write(b)
		}
		zw.Close()
		p := filepath.Join(dir, "f.pt")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		cf, err := ReadTorch(p)
		if err != nil && !errors.Is(err, ErrUnreadable) && !errors.Is(err, ErrForbiddenGlobal) {
			t.Fatalf("error of no kind: %v", err)
		}
		if err == nil {
			cf.Structure()
			InterpretCapture(cf)
		}
	})
}

// TestReadTorchMutations: 1500 deterministic mutations (PCG seed 5) of the
// fixtures' pickles — flipped, inserted, deleted, duplicated and saturated
// bytes — each read back as a tree or an error wrapping ErrUnreadable or
// ErrForbiddenGlobal; none panics or hangs. (A longer run of the same loop,
// 50,000 mutations, found nothing either.)
func TestReadTorchMutations(t *testing.T) {
	var seeds [][]byte
	storages := map[string][]byte{}
	for _, name := range []string{"per_token_rows.pt", "good_speculators_bf16.pt", "evil_global.pt"} {
		zr, err := zip.OpenReader(filepath.Join(capturesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, zf := range zr.File {
			b, _ := readRecord(zf, 1<<24)
			base := zf.Name[strings.Index(zf.Name, "/")+1:]
			if base == "data.pkl" {
				seeds = append(seeds, b)
			} else if strings.HasPrefix(base, "data/") {
				storages[strings.TrimPrefix(base, "data/")] = b
			}
		}
		zr.Close()
	}
	r := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	for it := range 1500 {
		p := append([]byte(nil), seeds[r.IntN(len(seeds))]...)
		for range 1 + r.IntN(6) {
			i := r.IntN(len(p))
			switch r.IntN(5) {
			case 0:
				p[i] = byte(r.IntN(256))
			case 1:
				p = append(p[:i:i], append([]byte{byte(r.IntN(256))}, p[i:]...)...)
			case 2:
				p = append(p[:i:i], p[min(len(p), i+r.IntN(20)):]...)
			case 3:
				k := r.IntN(len(p))
				p = append(p[:k:k], append(append([]byte(nil), p[i:min(len(p), i+r.IntN(40))]...), p[k:]...)...)
			case 4:
				v := []byte{0, 0xff, 0x7f, 0x80, 1, 2}[r.IntN(6)]
				for q := i; q < min(len(p), i+4); q++ {
					p[q] = v
				}
			}
			if len(p) == 0 {
				p = []byte{'.'}
			}
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create("a/data.pkl")
		w.Write(p)
		for k, b := range storages {
			w, _ := zw.Create("a/data/" + k)
			w.Write(b)
		}
		zw.Close()
		f := filepath.Join(dir, "f.pt")
		if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		cf, err := ReadTorch(f)
		if err != nil && !errors.Is(err, ErrUnreadable) && !errors.Is(err, ErrForbiddenGlobal) {
			t.Fatalf("mutation %d: error of no kind: %v", it, err)
		}
		if err == nil {
			InterpretCapture(cf)
		}
	}
}
