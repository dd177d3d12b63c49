package quote

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Clip returns strconv.Quote of s when s is at most limit bytes; else the
// quote of its first limit bytes, cut back to the start of a character
// the limit splits (a cut one would read as bytes that are not UTF-8;
// bytes that are not UTF-8 to begin with are kept up to limit, quoted as
// \x escapes), followed by "..." and
// s's size in bytes: Clip("abcdef", 4) = `"abcd"... (6 bytes)`. A limit
// below 0 counts as 0.
func Clip(s string, limit int) string {
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	n := max(limit, 0)
	// Cut back only through a character the cut splits (at most
	// utf8.UTFMax-1 bytes): bytes that are not UTF-8 (a binary token) are
	// cut at limit and quoted as \x escapes, not cut back to nothing.
	for p := n; p > 0 && p > n-utf8.UTFMax; p-- {
		if utf8.RuneStart(s[p-1]) {
			if r, size := utf8.DecodeRuneInString(s[p-1:]); r != utf8.RuneError && size > n-(p-1) {
				n = p - 1
			}
			break
		}
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:n]), len(s))
}
