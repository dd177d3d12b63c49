package enginetest

import (
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// Gunzip returns the decompressed bytes of the gzip file at path (a
// compressed testdata fixture such as a tokenizer.json.gz), failing t on
// any error.
func Gunzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}
