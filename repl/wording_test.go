package repl

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSourceLongLine: a script line over maxScriptLine (bufio.Scanner's
// "token too long") is an error naming the file, the line (counted by
// hand: the long line is the second) and the limit; the first line ran.
func TestSourceLongLine(t *testing.T) {
	f := newFake(t, 1)
	p := filepath.Join(t.TempDir(), "long.hsdb")
	writeFile(t, p, "echo first\necho "+strings.Repeat("x", maxScriptLine)+"\n")
	f.AssertError("source "+p, p+":2: a line longer than "+strconv.Itoa(1<<24)+" bytes")
	if !strings.Contains(f.buf.String(), "first") {
		t.Fatalf("the line before the long one did not run:\n%s", f.buf.String())
	}
}
