package check

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wantLimit fails unless err is a resource-limit refusal (ErrLimit and
// ErrUnreadable) whose message holds every fragment.
func wantLimit(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if !errors.Is(err, ErrLimit) || !errors.Is(err, ErrUnreadable) {
		t.Fatalf("want a resource-limit refusal, got %v", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q lacks %q", err, f)
		}
	}
}

// TestCase10MemoisedListBomb: cases/README.md case 10, byte for byte — a
// list of 1024 strings, memoised, then appended 2^20 times to another
// list. gopickle builds it as a million pointers, but expanded into a tree
// it is 2^30 values: refused from the object graph, before a tree is built.
func TestCase10MemoisedListBomb(t *testing.T) {
	var p bytes.Buffer
	p.WriteString("\x80\x02]q\x00(")
	p.WriteString(strings.Repeat("X\x01\x00\x00\x00a", 1024))
	p.WriteString("eq\x01]q\x02(")
	p.WriteString(strings.Repeat("h\x01", 1<<20))
	p.WriteString("e.")
	start := time.Now()
	_, err := ReadTorch(writeTorchZip(t, "bomb", p.String(), nil))
	wantLimit(t, err, "more than 1048576 values", "bomb.pt")
	t.Logf("refused in %v: %v", time.Since(start), err)
}

// TestCase11DeflatedPickleBomb: case 11 — archive/data.pkl deflated from
// "\x80\x02" + 300 MiB of 'N' + "." to about 300 KB. Refused from the
// entry's declared uncompressed size, before a byte is inflated.
func TestCase11DeflatedPickleBomb(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestCompression) })
	w, err := zw.Create("archive/data.pkl")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte{0x80, 0x02})
	chunk := bytes.Repeat([]byte("N"), 1<<20)
	for range 300 {
		w.Write(chunk)
	}
	w.Write([]byte("."))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 1<<20 {
		t.Fatalf("the bomb is %d bytes on disk, want about 300 KB", buf.Len())
	}
	p := filepath.Join(t.TempDir(), "zipbomb.pt")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadTorch(p)
	wantLimit(t, err, "archive/data.pkl declares 314572803 bytes uncompressed", "at most 64 MiB")
	// Over the per-file slack for storages: a 2 MiB record inflating to
	// more than the file's size + 256 MiB would be refused the same way.
	b := &budget{recordLimit: 1000}
	if err := b.takeRecord(&zip.File{FileHeader: zip.FileHeader{Name: "a/data/0", UncompressedSize64: 1001}}); !errors.Is(err, ErrLimit) {
		t.Fatalf("record over the budget: %v", err)
	}
}

// TestCase12SharedReferencesExpand: the shape of input that stalled the
// reader for minutes — lists that reference one list twice, 40 levels
// deep: 2^40 values once expanded, a few hundred bytes of pickle. Refused
// from the object graph (each list counted once).
func TestCase12SharedReferencesExpand(t *testing.T) {
	var p bytes.Buffer
	p.WriteString("\x80\x02]q\x00K\x01a")
	for i := 1; i <= 40; i++ {
		p.WriteString("]q" + string(rune(i)) + "(h" + string(rune(i-1)) + "h" + string(rune(i-1)) + "e")
	}
	p.WriteString(".")
	_, err := ReadTorch(writeTorchZip(t, "dag", p.String(), nil))
	wantLimit(t, err, "more than 1048576 values")
}

// TestCase12SelfReference: a list appended to itself ("]q\x00h\x00a.")
// is refused by name rather than expanded forever.
func TestCase12SelfReference(t *testing.T) {
	_, err := ReadTorch(writeTorchZip(t, "loop", "\x80\x02]q\x00h\x00a.", nil))
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "contains itself") {
		t.Fatalf("self-referencing list: %v", err)
	}
}

// TestCase12ExpandedView: a stride-0 view of size (1024, 1024) over a
// storage of one float would be 4 MiB of copies of one number; the
// tensors rebuilt may total 4 × the storage + 1 MiB.
func TestCase12ExpandedView(t *testing.T) {
	pkl := "\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" +
		"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQ" +
		"K\x00M\x00\x04M\x00\x04\x86K\x00K\x00\x86\x89NtR."
	_, err := ReadTorch(writeTorchZip(t, "exp", pkl, map[string][]byte{"0": make([]byte, 4)}))
	wantLimit(t, err, "4194304 bytes", "storage 0")
}

// TestCase12LongNumber: a decimal long of 100,000 digits (parsed in
// quadratic time by math/big) is refused by the opcode scan.
func TestCase12LongNumber(t *testing.T) {
	_, err := ReadTorch(writeTorchZip(t, "long", "\x80\x02L"+strings.Repeat("9", 100000)+"L\n.", nil))
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "number literal of 100001 characters") {
		t.Fatalf("long number: %v", err)
	}
}

// TestReadTorchDeadline: the unpickler's reader fails once its deadline
// has passed, naming the limit.
func TestReadTorchDeadline(t *testing.T) {
	r := &deadlineReader{data: make([]byte, 1<<17), deadline: time.Now().Add(-time.Second)}
	_, err := r.ReadByte()
	wantLimit(t, err, "longer than 1m0s") // MaxUnpickleTime, 60 s
}
