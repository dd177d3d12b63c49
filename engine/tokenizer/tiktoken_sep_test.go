package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// TestTiktokenRankSeparators: tiktoken's load_tiktoken_bpe splits a line
// with Python's bytes.split(), at ASCII whitespace only, so a line whose
// token and rank are parted by U+00A0, U+0085 or U+3000 is one field and
// tiktoken refuses the file (not enough values to unpack); hsdb's
// strings.Fields cut there too and loaded the token with that rank. Now
// such a line is refused naming it; tabs, vertical tabs and form feeds
// (ASCII whitespace) still part the fields, the token "ab" at rank 256.
func TestTiktokenRankSeparators(t *testing.T) {
	for _, sep := range []string{"\u00a0", "\u0085", "\u3000", "\u2003"} {
		path := kimiDir(t, byteRanks(b64("ab")+sep+"256"), "")
		tk, err := LoadKimi(path)
		if tk != nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "line 257: ") || !strings.Contains(err.Error(), `want "<base64 token> <rank>"`) {
			t.Errorf("separator %q: %v; want an ErrFormat naming line 257 as one field", sep, err)
		}
	}
	for _, sep := range []string{"\t", "\v", "\f", " \t "} {
		tk, err := LoadKimi(kimiDir(t, byteRanks(b64("ab")+sep+"256"), ""))
		if err != nil {
			t.Errorf("separator %q: %v; want it loaded", sep, err)
			continue
		}
		if ids, err := tk.Encode("ab"); err != nil || len(ids) != 1 || ids[0] != 256 {
			t.Errorf("separator %q: \"ab\" is %v, %v; want [256]", sep, ids, err)
		}
	}
}
