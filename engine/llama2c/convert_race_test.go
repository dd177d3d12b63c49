package llama2c

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertOutMadeMeanwhile: --out was checked only before the files
// were written; a directory another process made there meanwhile (a
// second convert, a user's notes) was moved aside and removed at the
// rename, without --force and, with --force, though hsdb did not write
// it. It is checked again before the rename: refused, its file kept, and
// the staging directory removed.
func TestConvertOutMadeMeanwhile(t *testing.T) {
	defer func() { testHookWriter = nil }()
	for _, force := range []bool{false, true} {
		parent := t.TempDir()
		out := filepath.Join(parent, "out")
		notes := filepath.Join(out, "notes.txt")
		testHookWriter = func(path string, w io.Writer) io.Writer {
			if filepath.Base(path) == "tokenizer.bin" { // the last file written, before the rename
				if err := os.MkdirAll(out, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			return w
		}
		err := Convert(storiesBin, []string{"../../testdata/stories260K/tok512.bin"}, out, force)
		if err == nil || !strings.Contains(err.Error(), out) {
			t.Fatalf("force %v: Convert while another process made %s: %v, want a refusal naming it", force, out, err)
		}
		if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
			t.Fatalf("force %v: %s is %q (%v), want it kept", force, notes, b, err)
		}
		ents, _ := os.ReadDir(parent)
		if len(ents) != 1 || ents[0].Name() != "out" {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("force %v: %s holds %v, want out alone (no staging left)", force, parent, names)
		}
	}
}
