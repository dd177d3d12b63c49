package llama2c

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReadHugeFileRefusedFromSize: a checkpoint whose file is far larger
// than its header's arrays (stories260K followed by a sparse hole up to
// 256 MiB: a wrong or corrupt file) is refused from its size, naming the
// bytes left over, without reading them: the whole file was read into
// memory first (a sparse terabyte-sized .bin exhausted it) and the
// trailing bytes refused only afterwards. The test asserts the allocation
// stays far below the file's size.
func TestReadHugeFileRefusedFromSize(t *testing.T) {
	data, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "huge.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	const size = 256 << 20
	if err := os.Truncate(p, size); err != nil {
		t.Skip("truncate:", err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Read(p)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "bytes left after the last array") {
		t.Fatalf("Read = %v, want ErrFormat naming the bytes left after the last array", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("Read allocated %d MiB for a %d MiB file it refuses from its size", got>>20, size>>20)
	}
}
