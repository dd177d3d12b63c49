package regfile

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReadFileOneBuffer: ReadFile holds a file in one buffer of its size.
// It read through io.ReadAll, which grows from 512 bytes by doubling: a
// tokenizer file of 480 MB took about twice its size in copies before it
// was parsed (and time copying it). A 16 MiB file now costs 16 MiB and a
// byte, and reads back byte for byte; a file empty by its size (as /proc
// files are) is still read whole.
func TestReadFileOneBuffer(t *testing.T) {
	const size = 16 << 20
	want := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	p := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := ReadFile(p, size)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFile: %d bytes, %v; want the %d bytes written", len(got), err, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+size/8 {
		t.Errorf("reading %d bytes allocated %d", size, alloc)
	}
	if _, err := ReadFile(p, size-1); err == nil {
		t.Errorf("a file of %d bytes read under a bound of %d", size, size-1)
	}
	if b, err := ReadFile("/proc/self/status", 1<<20); err != nil || !bytes.Contains(b, []byte("Name:")) {
		t.Errorf("/proc/self/status (size 0 by stat): %d bytes, %v", len(b), err)
	}
}
