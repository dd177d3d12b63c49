package safetensors

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"hsdb/engine/regfile"
)

// TestFifoCheckpoint: a model directory whose model.safetensors
// (or index) is a named pipe made `hsdb --model DIR` wait forever in
// open; it is now refused at once, naming the file.
func TestFifoCheckpoint(t *testing.T) {
	single, sharded := t.TempDir(), t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(single, SingleName), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := syscall.Mkfifo(filepath.Join(sharded, IndexName), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{single, sharded} {
		done := make(chan error, 1)
		go func() {
			s, err := OpenDir(dir)
			if err == nil {
				s.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, regfile.ErrNotRegular) {
				t.Errorf("%s: OpenDir = %v, want a not-a-regular-file error", dir, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: OpenDir blocked on the fifo", dir)
		}
	}
}
