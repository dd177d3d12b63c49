package quote

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Clip returns strconv.Quote of s when s is at most limit bytes; else the
// quote of its first limit bytes, cut back to the start of a character (a
// cut one would read as bytes that are not UTF-8), followed by "..." and
// s's size in bytes: Clip("abcdef", 4) = `"abcd"... (6 bytes)`. A limit
// below 0 counts as 0.
func Clip(s string, limit int) string {
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	n := max(limit, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:n]), len(s))
}
