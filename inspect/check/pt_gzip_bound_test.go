package check

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// gzipped returns parts gzipped as one gzip member.
func gzipped(t *testing.T, parts ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	for _, p := range parts {
		if _, err := zw.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readTorchAllocs writes data to dir/name, reads it with ReadTorch and
// returns the error and the bytes allocated meanwhile.
func readTorchAllocs(t *testing.T, name string, data []byte) (string, error, uint64) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadTorch(p)
	runtime.ReadMemStats(&after)
	return p, err, after.TotalAlloc - before.TotalAlloc
}

// TestGzipBombBehindZipHeader: a .ckpt.gz whose gunzipped content is
// "PK\x03\x04" and then 64 MiB of zeros (64 KB on disk; its gzip trailer
// honestly declares the 64 MiB) is refused from the first local file
// header, whose record name is empty (30 zero bytes where torch.save
// writes NAME/data.pkl), without expanding the rest: the zip signature
// let the whole stream be gunzipped into memory (up to 4 GiB).
func TestGzipBombBehindZipHeader(t *testing.T) {
	p, err, alloc := readTorchAllocs(t, "data_0.ckpt.gz", gzipped(t, []byte("PK\x03\x04"), make([]byte, 64<<20)))
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "empty name") {
		t.Fatalf("ReadTorch = %v, want ErrUnreadable naming %s and the first record's empty name", err, p)
	}
	if alloc > 16<<20 {
		t.Errorf("ReadTorch allocated %d MiB to refuse a stream from its first header", alloc>>20)
	}
}

// TestGzipPastItsTrailer: a real torch.save archive (good_speculators.pt)
// followed by 64 MiB of zeros, gzipped, with the gzip trailer's ISIZE set
// to the archive's own size (as a crafted file would declare it) is
// refused once the stream yields one byte more than ISIZE, naming the
// file and the declared size, having allocated a few MiB rather than the
// 64 MiB it expands to.
func TestGzipPastItsTrailer(t *testing.T) {
	good, err := os.ReadFile("../../testdata/captures/good_speculators.pt")
	if err != nil {
		t.Fatal(err)
	}
	gz := gzipped(t, good, make([]byte, 64<<20))
	binary.LittleEndian.PutUint32(gz[len(gz)-4:], uint32(len(good)))
	if len(good) != 16700 {
		t.Fatalf("good_speculators.pt is %d bytes; the test names 16700", len(good))
	}
	p, err, alloc := readTorchAllocs(t, "data_1.ckpt.gz", gz)
	wantLimit(t, err, p, "expands past the 16700 bytes its gzip trailer declares")
	if alloc > 16<<20 {
		t.Errorf("ReadTorch allocated %d MiB to refuse a stream past its declared size", alloc>>20)
	}
	// The same archive gzipped alone reads.
	p = filepath.Join(t.TempDir(), "good.ckpt.gz")
	if err := os.WriteFile(p, gzipped(t, good), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTorch(p); err != nil {
		t.Errorf("the archive gzipped alone: %v", err)
	}
}

// TestGzipPastAvailableMemory: with 2 MiB "available", a gzipped archive
// that honestly declares 8 MiB is refused once it passes 1 MiB (check
// holds the gunzipped archive and the tensors copied from it), naming the
// bound; a second gzip member after a whole archive is refused, since no
// trailer read declares its size.
func TestGzipPastAvailableMemory(t *testing.T) {
	good, err := os.ReadFile("../../testdata/captures/good_speculators.pt")
	if err != nil {
		t.Fatal(err)
	}
	old := memAvailable
	t.Cleanup(func() { memAvailable = old })
	memAvailable = func() (int64, bool) { return 2 << 20, true }
	p, err, _ := readTorchAllocs(t, "big.ckpt.gz", gzipped(t, good, make([]byte, 8<<20)))
	wantLimit(t, err, p, "expands past 1048576 bytes", "MemAvailable")
	memAvailable = old
	p, err, _ = readTorchAllocs(t, "two.ckpt.gz", append(gzipped(t, good), gzipped(t, good)...))
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "second gzip member") {
		t.Fatalf("two gzip members: %v, want ErrUnreadable naming %s and the second member", err, p)
	}
}

// TestRecordsPastAvailableMemory: the records of a torch.save archive are
// read into memory, so their declared sizes may total at most the host's
// MemAvailable: with 1,000 bytes "available", good_speculators.pt (records
// by Python's zipfile: byteorder 6 bytes, data.pkl 442, data/0 96, data/1
// 4608) is refused at data/1, before it is read, naming the bound.
func TestRecordsPastAvailableMemory(t *testing.T) {
	old := memAvailable
	t.Cleanup(func() { memAvailable = old })
	memAvailable = func() (int64, bool) { return 1000, true }
	_, err := ReadTorch("../../testdata/captures/good_speculators.pt")
	wantLimit(t, err, "good_speculators.pt", "record good_speculators/data/1 declares 4608 bytes uncompressed", "at most 1000 bytes", "MemAvailable")
}
