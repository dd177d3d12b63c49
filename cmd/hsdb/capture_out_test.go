package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/inspect/capture"
)

// TestCaptureOutTrailingSlash: README's own `capture ... --out dump/`
// staged the job in "dump/.partial" (the path with the suffix appended
// after the slash), i.e. inside dump, so at the end dump existed without
// a manifest and the finished job was refused ("--force replaces only a
// dump hsdb wrote: not an hsdb dump: dump has no hsdb manifest"), exit 1
// with nothing written. Now DIR/ names DIR: the job is staged in
// DIR.partial and renamed to DIR, which holds the manifest and one file
// per sequence (2 here, as --ids gives 2 sequences).
func TestCaptureOutTrailingSlash(t *testing.T) {
	for format, layers := range map[string]string{"hsdb": "0,1", "speculators": "1,2"} {
		dir := filepath.Join(t.TempDir(), "dump")
		stdout, errs, code := runHsdb(t, "capture", "--format", format, "--layers", layers, "--ids", "1,403,407;1,400", "--out", dir+"/")
		if code != 0 {
			t.Fatalf("--format %s --out %s/: exit %d\n%s\n%s", format, dir, code, stdout, errs)
		}
		m, err := capture.ReadManifest(dir)
		if err != nil {
			t.Fatalf("--format %s: %v", format, err)
		}
		if len(m.Sequences) != 2 {
			t.Errorf("--format %s: manifest lists %d sequences, want 2", format, len(m.Sequences))
		}
		if _, err := os.Lstat(filepath.Join(dir, capture.PartialSuffix)); err == nil {
			t.Errorf("--format %s: %s/%s left inside the dump", format, dir, capture.PartialSuffix)
		}
		if _, err := os.Lstat(dir + capture.PartialSuffix); err == nil {
			t.Errorf("--format %s: %s%s left beside the dump", format, dir, capture.PartialSuffix)
		}
	}
}

// TestCaptureOutMissingParent: README's `--out cache/hidden_states/`
// (SpecForge's layout) on a fresh machine failed with the lock file's
// error ("lock cache/.hidden_states.lock: open ...: no such file or
// directory"); missing parents are made, and a parent that is a file is
// named as such.
func TestCaptureOutMissingParent(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cache", "hidden_states")
	stdout, errs, code := runHsdb(t, "capture", "--format", "specforge", "--compress", "--layers", "0,1,2", "--ids", "1,403,407;1,400", "--out", out+"/")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	for _, f := range []string{"manifest.json", "rows_0-2000/data_0.ckpt.gz", "rows_0-2000/data_1.ckpt.gz"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%v", err)
		}
	}
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = runHsdb(t, "capture", "--layers", "1", "--ids", "1,2", "--out", filepath.Join(file, "d"))
	if code != 1 || !strings.Contains(errs, "creating its parent directory: mkdir "+file+": not a directory") {
		t.Errorf("parent is a file: exit %d, stderr %q", code, errs)
	}
}
