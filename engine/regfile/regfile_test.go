package regfile

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after 5 s (a
// blocking open of a named pipe never returns).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked after 5 s", what)
	}
}

// TestNewUser_FifoRefused: a named pipe where a file is expected (a
// hostile dump or model directory) is refused at once; before, os.Open
// waited for a writer forever and SIGTERM could not stop it.
func TestNewUser_FifoRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "manifest.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	within(t, "Open", func() {
		f, err := Open(fifo)
		if err == nil {
			f.Close()
		}
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(fifo) = %v, want ErrNotRegular", err)
		}
	})
	within(t, "ReadFile", func() {
		if _, err := ReadFile(fifo, 1<<20); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(fifo) = %v, want ErrNotRegular", err)
		}
	})
	// A symbolic link to the pipe, and a directory, are refused too.
	link := filepath.Join(dir, "x.safetensors")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	within(t, "Open(link)", func() {
		if _, err := Open(link); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(link to fifo) = %v, want ErrNotRegular", err)
		}
	})
	if _, err := Open(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open(dir) = %v, want ErrNotRegular", err)
	}
}

// TestNewUser_ReadFileBound: a regular file is read whole up to the
// bound; one byte more is ErrTooLarge.
func TestNewUser_ReadFileBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(p, 8)
	if err != nil || string(b) != `{"a": 1}` {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if b, err := ReadFile(p, math.MaxInt64); err != nil || string(b) != `{"a": 1}` { // no bound: max+1 must not wrap
		t.Fatalf("ReadFile(MaxInt64) = %q, %v", b, err)
	}
	if _, err := ReadFile(p, 7); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile over the bound = %v, want ErrTooLarge", err)
	}
}

// TestOpenInput: os.DevNull is an empty input (`hsdb -x /dev/null`);
// every other device is refused as Open refuses it.
func TestOpenInput(t *testing.T) {
	f, err := OpenInput(os.DevNull)
	if err != nil {
		t.Fatalf("OpenInput(%s) = %v", os.DevNull, err)
	}
	f.Close()
	within(t, "OpenInput(/dev/zero)", func() {
		if _, err := OpenInput("/dev/zero"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenInput(/dev/zero) = %v, want ErrNotRegular", err)
		}
	})
}
