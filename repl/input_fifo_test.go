package repl

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputFileNotRegular: `input file`, `source` and `check` given a
// named pipe with no writer, or a character device (/dev/zero,
// /dev/urandom), refuse it at once naming the path and what it is
// (`compare` and `patch`, which read dump directories, refuse it as not
// one, at once too). Before, `input file` and `source` opened the pipe with a blocking
// open that waits for a writer forever, and read /dev/zero until the
// 64 MiB line bound. Each command runs under a 5 s guard so a regression
// fails instead of hanging the suite.
func TestInputFileNotRegular(t *testing.T) {
	f := newFake(t, 1)
	fifo := filepath.Join(t.TempDir(), "batch.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	type target struct{ path, what string }
	targets := []target{{fifo, "a named pipe"}}
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if st, err := os.Stat(dev); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			targets = append(targets, target{dev, "a character device"})
		}
	}
	for _, tg := range targets {
		for _, cmd := range []string{"input file ", "source ", "check ", "compare ", "patch layers.0.hidden_states from "} {
			line := cmd + tg.path
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- f.Term.Exec(line) }()
			select {
			case err := <-done:
				want := tg.path + ": not a regular file (" + tg.what + ")"
				if dirReader := !strings.HasPrefix(cmd, "input") && !strings.HasPrefix(cmd, "source") && !strings.HasPrefix(cmd, "check"); dirReader {
					want = tg.path
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v\nwant an error holding %q", line, err, want)
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("%s took %v to refuse", line, d)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s still blocked after 5 s", line)
			}
		}
	}
}

// TestHistoryNotRegular: an interactive session whose --history names a
// named pipe is refused before readline opens it; readline opened it
// read-write and read it line by line, which waits for a writer forever
// (and /dev/zero reads without end). /dev/null still means no history.
func TestHistoryNotRegular(t *testing.T) {
	f := newFake(t, 1)
	fifo := filepath.Join(t.TempDir(), "hsdb_history")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Term.Interactive(fifo) }()
	select {
	case err := <-done:
		if want := "history: " + fifo + ": not a regular file (a named pipe)"; err == nil || err.Error() != want {
			t.Errorf("Interactive(fifo) = %v, want %q", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Interactive with a fifo history still blocked after 5 s")
	}
	if p, err := historyPath("/dev/zero"); err == nil || !strings.Contains(err.Error(), "/dev/zero: not a regular file (a character device)") {
		t.Errorf("historyPath(/dev/zero) = %q, %v", p, err)
	}
	if p, err := historyPath(os.DevNull); p != "" || err != nil {
		t.Errorf("historyPath(%s) = %q, %v; want no history", os.DevNull, p, err)
	}
	missing := filepath.Join(t.TempDir(), "new_history")
	if p, err := historyPath(missing); p != missing || err != nil {
		t.Errorf("historyPath(missing) = %q, %v; want it kept for readline to create", p, err)
	}
}

// TestInputFileTooLarge: `input file` holds the whole batch for one
// forward pass, so a file over debug.MaxBatchFileBytes (256 MiB) is
// refused from its size before anything is read, naming the file, its
// size, the bound and `hsdb capture --data` (a sparse file: no disk used).
func TestInputFileTooLarge(t *testing.T) {
	f := newFake(t, 1)
	p := filepath.Join(t.TempDir(), "big.jsonl")
	const size = 256<<20 + 1
	if err := os.WriteFile(p, []byte(`{"input_ids": [1, 2]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := f.Term.Exec("input file " + p)
	want := "input file: " + p + ": file too large: 268435457 bytes, at most 268435456 accepted: the batch is held whole for one forward pass; `hsdb capture --data` streams larger inputs"
	if err == nil || err.Error() != want {
		t.Errorf("input file (256 MiB + 1): %v\nwant %s", err, want)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusal took %v: the file was read", d)
	}
}
