package check

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestGzipNotZipRefusedAtOnce: a .ckpt.gz whose gunzipped content does not
// start as a zip archive (64 MiB of zeros in 64 KB: a gzip bomb, or a
// gzipped file of another kind) is refused from its first bytes, naming
// them, without expanding the rest: the whole stream was gunzipped into
// memory first (up to 4 GiB, 4.4 GB resident and 19 s for 2 GB of zeros in
// an 8.7 MB file) and then found not to be a zip archive.
func TestGzipNotZipRefusedAtOnce(t *testing.T) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 64 {
		zw.Write(zero)
	}
	zw.Close()
	p := filepath.Join(t.TempDir(), "data_0.ckpt.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadTorch(p)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "not a zip archive") || !strings.Contains(err.Error(), "00 00 00 00") {
		t.Fatalf("ReadTorch = %v, want ErrUnreadable saying the gunzipped content is not a zip archive and naming its first bytes", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("ReadTorch allocated %d MiB to refuse a stream from its first bytes", got>>20)
	}
}
