package repl

import (
	"strings"
	"testing"
)

// TestScriptCRLineEnds: a script saved with classic Mac OS line ends (a
// lone CR ends each line) runs each of its commands; it was read as one
// line, its CRs dropped, so the first echo printed the rest of the script
// and nothing else ran (exit status 0). CRLF and LF in the same file still
// end one line each (no empty command between CR and LF).
func TestScriptCRLineEnds(t *testing.T) {
	f := newFake(t, 1)
	script := "echo first\r" + batchCmd + "\recho second\r\necho third\nbogus-command\r"
	err := f.RunScript(strings.NewReader(script), "cr.hsdb")
	out := f.buf.String()
	if err == nil || !strings.Contains(out, "cr.hsdb:5:") || !strings.Contains(out, `unknown command "bogus-command"`) {
		t.Fatalf("the fifth line's unknown command was not reported as line 5 (err %v):\n%s", err, out)
	}
	for _, want := range []string{"first\n", "batch: 2 sequences, 10 tokens", "second\n", "third\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("script with CR line ends: no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "firstinput") || strings.Contains(out, "first"+batchCmd) {
		t.Fatalf("lines joined:\n%s", out)
	}
}

// TestScanScriptLinesSplitCR: a CR that ends the reader's buffer is held
// until the next byte says whether it begins a CRLF (one line end, not two).
func TestScanScriptLinesSplitCR(t *testing.T) {
	adv, tok, err := scanScriptLines([]byte("abc\r"), false)
	if adv != 0 || tok != nil || err != nil {
		t.Fatalf("CR at the buffer's end not held: %d %q %v", adv, tok, err)
	}
	adv, tok, _ = scanScriptLines([]byte("abc\r\nx"), false)
	if adv != 5 || string(tok) != "abc" {
		t.Fatalf("CRLF: advance %d token %q, want 5 \"abc\"", adv, tok)
	}
	adv, tok, _ = scanScriptLines([]byte("abc\r"), true)
	if adv != 4 || string(tok) != "abc" {
		t.Fatalf("CR at EOF: advance %d token %q, want 4 \"abc\"", adv, tok)
	}
}
