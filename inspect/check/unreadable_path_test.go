package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnreadablePathOnce: an unreadable file in a directory was reported
// as "DIR/a.safetensors: DIR/a.safetensors: unreadable capture file: ..."
// by --summary, and "cannot read: DIR/a.safetensors: unreadable ..."
// under its own "DIR/a.safetensors:" heading by check and diff: the
// reader's error names the file already. The summary line names it once,
// the line under the heading not again.
func TestUnreadablePathOnce(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.safetensors")
	if err := os.WriteFile(p, []byte("junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr := CheckPath(dir, CheckOptions{})
	if len(pr.Files) != 1 || pr.Files[0].Err == nil {
		t.Fatalf("files %+v", pr.Files)
	}
	diff, _ := pr.Files[0].DiffLines()
	all := append(append(pr.SummaryLines(5), pr.Lines()...), diff...)
	found := 0
	for _, l := range all {
		if strings.Contains(l, "unreadable capture file") {
			found++
			if n := strings.Count(l, p); n > 1 || (strings.Contains(l, "cannot read:") && n > 0) {
				t.Errorf("%q names the file %d times", l, n)
			}
		}
	}
	if found < 3 {
		t.Errorf("the error is in %d lines, want summary, check and diff:\n%s", found, strings.Join(all, "\n"))
	}
}
