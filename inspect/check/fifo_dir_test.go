package check

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFifoInCaptureDir: `check DIR` on a directory holding a
// named pipe (as a capture file, or as manifest.json) waited forever on
// the pipe's open; README promises check opens only regular files. Each is
// now reported unreadable at once, naming the file.
func TestFifoInCaptureDir(t *testing.T) {
	plain, dump := t.TempDir(), t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(plain, "data_0.pt"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := syscall.Mkfifo(filepath.Join(dump, "manifest.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan *PathReport, 2)
	go func() {
		done <- CheckPath(plain, CheckOptions{})
		done <- CheckPath(dump, CheckOptions{})
	}()
	for i, want := range []string{"data_0.pt: not a regular file (a named pipe)", "manifest.json: not a regular file (a named pipe)"} {
		select {
		case p := <-done:
			var msg string
			if p.Err != nil {
				msg = p.Err.Error()
			}
			for _, f := range p.Files {
				if f.Err != nil {
					msg += f.Err.Error()
				}
			}
			if !strings.Contains(msg, want) {
				t.Errorf("case %d: errors %q, want one containing %q", i, msg, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("case %d: check blocked on the fifo", i)
		}
	}
}
