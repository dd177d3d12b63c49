package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputsNotRegular: `hsdb capture --data` and `hsdb -x` given a named
// pipe with no writer, or /dev/zero, fail at once naming the path and what
// it is. Before, --data was opened with a blocking open (waiting for a
// writer forever) and /dev/zero was read to the 64 MiB line bound; -x
// loaded the model and then blocked in `source`. Each run is guarded so a
// regression fails instead of hanging the suite.
func TestInputsNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "rows.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	for _, c := range []struct {
		path, what string
		args       []string
	}{
		{fifo, "a named pipe", []string{"capture", "--layers", "0", "--data", fifo, "--out", filepath.Join(dir, "a")}},
		{"/dev/zero", "a character device", []string{"capture", "--layers", "0", "--data", "/dev/zero", "--out", filepath.Join(dir, "b")}},
		{fifo, "a named pipe", []string{"-x", fifo}},
		{"/dev/zero", "a character device", []string{"-x", "/dev/zero"}},
	} {
		type result struct {
			errs string
			code int
		}
		done := make(chan result, 1)
		go func() { _, errs, code := runHsdb(t, c.args...); done <- result{errs, code} }()
		select {
		case r := <-done:
			if want := c.path + ": not a regular file (" + c.what + ")"; r.code == 0 || !strings.Contains(r.errs, want) {
				t.Errorf("hsdb %s: exit %d, stderr %q; want an error holding %q", strings.Join(c.args, " "), r.code, r.errs, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("hsdb %s still blocked after 10 s", strings.Join(c.args, " "))
		}
	}
}
