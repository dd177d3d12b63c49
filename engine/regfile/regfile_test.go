package regfile

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// TestOpenBounded: a file over the bound is refused before it is read; a
// file within it reads whole; one that grows past the bound after the
// open fails with ErrTooLarge rather than returning the extra bytes.
func TestOpenBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "batch.jsonl")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBounded(p, 9); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p+": file too large: 10 bytes, at most 9 accepted") {
		t.Fatalf("OpenBounded over the bound = %v", err)
	}
	r, err := OpenBounded(p, 10)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	r.Close()
	r, err = OpenBounded(p, 12)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("abcdef") // 16 bytes now
	f.Close()
	b, err := io.ReadAll(r)
	if !errors.Is(err, ErrTooLarge) || string(b) != "0123456789ab" {
		t.Fatalf("grown file: %q, %v; want the first 12 bytes and ErrTooLarge", b, err)
	}
	fifo := filepath.Join(t.TempDir(), "p")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	within(t, "OpenBounded(fifo)", func() {
		if _, err := OpenBounded(fifo, 1<<20); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenBounded(fifo) = %v", err)
		}
	})
}

// TestDanglingSymlinkNamed: opening a symbolic link whose target is
// missing (an HF hub snapshot with a blob never downloaded) says so,
// naming the link and its target, and still wraps fs.ErrNotExist; it said
// only "open P: no such file or directory" of a P that ls lists.
func TestDanglingSymlinkNamed(t *testing.T) {
	dir := t.TempDir()
	link, target := filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "blobs", "0123abcd")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("symlink:", err)
	}
	_, err := Open(link)
	if !errors.Is(err, ErrDanglingLink) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(dangling link) = %v, want ErrDanglingLink and not fs.ErrNotExist", err)
	}
	for _, want := range []string{link, "symbolic link", target, "does not exist"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(dangling link) = %q, does not name %q", err, want)
		}
	}
	if _, err := ReadFile(link, 1<<20); err == nil || !strings.Contains(err.Error(), target) {
		t.Errorf("ReadFile(dangling link) = %v, want the target named", err)
	}
	present, err := Present(link)
	if !present || err != nil {
		t.Errorf("Present(dangling link) = %v, %v; want true (the entry exists)", present, err)
	}
	if present, err := Present(filepath.Join(dir, "absent")); present || err != nil {
		t.Errorf("Present(absent) = %v, %v; want false, nil", present, err)
	}
}
