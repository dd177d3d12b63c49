package check

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestZipEntriesBounded: a torch.save-like archive whose central directory
// lists a million empty records (100 MB) took 365 MB before a record was
// read: archive/zip holds every entry. Past MaxZipEntries (here 524,289
// records, so the count is in the ZIP64 end record, as Go and torch write
// it past 65,535) the archive is refused from its end record, naming the
// count and the bound, with almost nothing allocated; one of a few records
// is read as before.
func TestZipEntriesBounded(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	put := func(name string, b []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	put("a/data.pkl", []byte("\x80\x02N."))
	put("a/byteorder", []byte("little"))
	for i := range MaxZipEntries - 1 {
		put(fmt.Sprintf("a/data/%d", i), nil)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "many.pt")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	buf = bytes.Buffer{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadTorch(p)
	runtime.ReadMemStats(&after)
	wantLimit(t, err, "many.pt", fmt.Sprintf("the archive lists %d records, more than %d", MaxZipEntries+1, MaxZipEntries))
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("refusing %d records allocated %d bytes, want under 1 MiB", MaxZipEntries+1, got)
	}

	cf, err := ReadTorch(writeTorchZip(t, "few", "\x80\x02N.", map[string][]byte{"0": nil}))
	if err != nil || cf.Root == nil || cf.Root.Kind != KindScalar || cf.Root.Scalar != nil {
		t.Fatalf("an archive of 3 records holding None: %+v, %v", cf, err)
	}
}
