package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/inspect/capture"
)

// filesRule returns the dump's "files" rule.
func filesRule(t *testing.T, dir string) RuleResult {
	t.Helper()
	pr := CheckPath(dir, CheckOptions{})
	for _, r := range pr.Rules {
		if r.Rule == "files" {
			return r
		}
	}
	t.Fatalf("no files rule:\n%s", strings.Join(pr.Lines(), "\n"))
	return RuleResult{}
}

// TestDumpStrayFilesFlagged: files in a dump directory that its manifest
// does not list (a text file, one in a subdirectory, a symbolic link) fail
// the files rule by name, as a stray seq_*.safetensors does; the clean
// dump (manifest.json and its one listed sequence file) passes.
func TestDumpStrayFilesFlagged(t *testing.T) {
	_, dir := llamaDump(t, []int{0})
	if r := filesRule(t, dir); r.Status != capture.Pass {
		t.Fatalf("clean dump: %s %s", r.Status, r.Detail)
	}
	if err := os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "readme.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	r := filesRule(t, dir)
	if r.Status != capture.Fail || !strings.Contains(r.Detail, "extra.txt") || !strings.Contains(r.Detail, "notes/readme.md") || !strings.Contains(r.Detail, "link") {
		t.Fatalf("stray files: %s %s", r.Status, r.Detail)
	}
}

// TestDumpListedSymlinkNamed: a listed sequence file replaced by a symbolic
// link (to the very file it replaced) is named as a symbolic link, not as
// missing; a removed one is still "listed but missing".
func TestDumpListedSymlinkNamed(t *testing.T) {
	_, dir := llamaDump(t, []int{0})
	m, err := capture.ReadManifest(dir)
	if err != nil || len(m.Sequences) != 1 {
		t.Fatalf("%v %+v", err, m)
	}
	seq := filepath.Join(dir, m.Sequences[0].File)
	moved := filepath.Join(t.TempDir(), "real.safetensors")
	if err := os.Rename(seq, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, seq); err != nil {
		t.Fatal(err)
	}
	r := filesRule(t, dir)
	want := "listed but not a plain file: " + m.Sequences[0].File + " is a symbolic link"
	if r.Status != capture.Fail || r.Detail != want {
		t.Fatalf("symlinked sequence file: %s %q, want FAIL %q", r.Status, r.Detail, want)
	}
	os.Remove(seq)
	if r := filesRule(t, dir); r.Status != capture.Fail || r.Detail != "listed but missing: "+m.Sequences[0].File {
		t.Fatalf("removed sequence file: %s %q", r.Status, r.Detail)
	}
}
