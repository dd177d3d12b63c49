package repl

import (
	"strings"
	"testing"
)

// TestScriptBOM: a script saved with a UTF-8 byte order mark (EF BB BF,
// as Windows editors write "UTF-8 with BOM") runs its first command; the
// mark is not part of the command's name ("unknown command \ufeffinput").
func TestScriptBOM(t *testing.T) {
	f := newFake(t, 1)
	if err := f.RunScript(strings.NewReader("\ufeff"+batchCmd+"\r\necho done\r\n"), "bom.hsdb"); err != nil {
		t.Fatalf("script with a BOM: %v\n%s", err, f.buf.String())
	}
	if out := f.buf.String(); !strings.Contains(out, "batch: 2 sequences, 10 tokens") || !strings.Contains(out, "done") {
		t.Fatalf("script with a BOM printed:\n%s", out)
	}
}
