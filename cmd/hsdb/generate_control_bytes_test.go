package main

import (
	"strings"
	"testing"
)

// TestGenerateDropsControlBytes: a prompt or sample holding a byte token
// of an ASCII control character went to the terminal raw: stories260K's
// ids 30 and 11 are <0x1B> (ESC) and <0x08> (backspace) (SentencePiece
// byte fallback puts <0x00>..<0xFF> at ids 3..258), and `generate --ids
// 1,30,403` printed "\x1b Once upon a time". run.c's safe_printf drops a
// one-byte piece that is neither printable nor whitespace; so does hsdb
// now, while <0x0A> (id 13, a newline) is still printed.
func TestGenerateDropsControlBytes(t *testing.T) {
	for _, c := range []struct {
		ids    string
		banned string
		keep   string
	}{
		{"1,30,403", "\x1b", " Once"},
		{"1,11,403", "\x08", " Once"},
		{"1,13,403", "", "\n Once"},
	} {
		out, errs, code := runHsdb(t, "generate", "--ids", c.ids, "-n", "5")
		if code != 0 {
			t.Fatalf("--ids %s: exit %d: %s", c.ids, code, errs)
		}
		if (c.banned != "" && strings.Contains(out, c.banned)) || !strings.HasPrefix(out, c.keep) {
			t.Errorf("--ids %s: stdout %q; want no %q and to begin %q", c.ids, out, c.banned, c.keep)
		}
	}
}
