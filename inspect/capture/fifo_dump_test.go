package capture

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFifoInDump: a dump whose journal.jsonl or manifest.json is
// a named pipe (a hostile tarball can hold one) hung ReadManifest, and so
// `check DIR`, `dump DIR --force` and `capture --out DIR --force` (SIGTERM
// could not stop the blocked open). Each now refuses at once, naming the
// file, and the dump is left as it was.
func TestFifoInDump(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	info.Job = nil
	parent := t.TempDir()
	d := filepath.Join(parent, "d")
	if _, err := Dump(d, seqs, reps, info, DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, JournalName), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := ReadManifest(d)
		done <- err
		_, err = Dump(d, seqs, reps, info, DumpOptions{Force: true})
		done <- err
	}()
	for _, what := range []string{"ReadManifest", "Dump --force"} {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "journal.jsonl: not a regular file (a named pipe)") {
				t.Errorf("%s on a dump with a fifo journal: %v, want a not-a-regular-file error", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked on the fifo", what)
		}
	}
	// Nothing was replaced: the manifest and the sequence files remain.
	if _, err := os.Stat(filepath.Join(d, ManifestName)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(d, JournalName))
	m, err := ReadManifest(d)
	if err != nil || len(m.Sequences) != len(seqs) {
		t.Fatalf("after removing the fifo: %v sequences, %v", m, err)
	}
}
