package check

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestCaptureFileOverAvailableMemory: check copies every tensor of a file
// out at once; a file larger than the host's MemAvailable is refused from
// its size before anything is read, naming both (here the file of 1,000
// bytes against 512 bytes "available", in bytes: both were "0.00 GiB"
// when every size was written in GiB). A file under the figure is read as
// before.
func TestCaptureFileOverAvailableMemory(t *testing.T) {
	old := memAvailable
	t.Cleanup(func() { memAvailable = old })
	p := t.TempDir() + "/big.safetensors"
	if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	memAvailable = func() (int64, bool) { return 512, true }
	_, err := ReadCaptureFile(p)
	if !errors.Is(err, ErrLimit) || !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p+": the file is 1000 B and") ||
		!strings.Contains(err.Error(), "the host has 512 B available (MemAvailable)") {
		t.Errorf("1000-byte file against 512 bytes available: %v", err)
	}
	memAvailable = func() (int64, bool) { return 1 << 40, true }
	if _, err := ReadCaptureFile("../../testdata/captures/good.safetensors"); err != nil {
		t.Errorf("a file under the available memory: %v", err)
	}
}
