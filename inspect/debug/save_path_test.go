package debug

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSaveForceNamesSymlink: `save stream z.npy --force` where z.npy is a
// symbolic link is refused, and its kind is named in words (regfile.Kind),
// not Go's mode string ("not a regular file (L---------)"); the link's
// target is untouched.
func TestSaveForceNamesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	if err := os.WriteFile(target, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "z.npy")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	err := savePathOK(link, true)
	if want := "save " + link + ": a symbolic link, not a regular file; --force replaces only a file save wrote"; err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if b, _ := os.ReadFile(target); string(b) != "mine" {
		t.Fatalf("target now holds %q", b)
	}
}
