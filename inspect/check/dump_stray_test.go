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
	os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("notes"), 0o644)
	os.Mkdir(filepath.Join(dir, "notes"), 0o755)
	os.WriteFile(filepath.Join(dir, "notes", "readme.md"), []byte("x"), 0o644)
	os.Symlink("/etc/hostname", filepath.Join(dir, "link"))
	r := filesRule(t, dir)
	if r.Status != capture.Fail || !strings.Contains(r.Detail, "extra.txt") || !strings.Contains(r.Detail, "notes/readme.md") || !strings.Contains(r.Detail, "link") {
		t.Fatalf("stray files: %s %s", r.Status, r.Detail)
	}
}
