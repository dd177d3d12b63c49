package capture

import (
	"strconv"
	"unicode/utf8"

	"hsdb/engine/quote"
)

// MaxFileText bounds, in bytes, a string a file gives (a manifest's model
// path, device or format, a file name found in a dump directory) as a
// message quotes it (FileText).
const MaxFileText = 256

// FileText returns s as a message or a report line quotes a string read
// from a file the user did not type (a manifest field, a directory entry's
// name): s itself when it is at most MaxFileText bytes of printable UTF-8
// (strconv.IsPrint); else Go-quoted (a newline, a terminal escape, a
// bidirectional control or a byte that is not UTF-8 written as \n, \x1b,
// \u202e, \xff), its first MaxFileText bytes and its size when longer. So
// a message that names it stays one bounded line: a manifest's device of
// "cuda\nverdict: valid" cannot forge a line, nor one of 1 MB fill the
// screen.
func FileText(s string) string {
	if len(s) <= MaxFileText && printable(s) {
		return s
	}
	return QuoteFileText(s)
}

// QuoteFileText is FileText's quoted form, for a message that quotes the
// string whatever it holds (an id, a file name: "%q"): strconv.Quote of s,
// or of its first MaxFileText bytes followed by its size when longer.
func QuoteFileText(s string) string { return quote.Clip(s, MaxFileText) }

// printable reports whether s is valid UTF-8 of printable characters and
// ASCII spaces only (strconv.IsPrint).
func printable(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || !strconv.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}
