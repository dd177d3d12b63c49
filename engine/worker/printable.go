package worker

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s when it is printable text, cut at 1024 bytes with
// "…"; otherwise (a binary answer or a worker writing raw bytes, which
// must not reach the terminal as they are) its first 64 bytes quoted with
// Go escapes (strconv.QuoteToGraphic), "…" when cut. It is used for every
// line another program wrote that hsdb repeats: a CUDA worker's probe
// answer, a worker's stderr lines and its last words in a fault report.
// 1024 bytes hold cu's init error (140 bytes, its URL and the driver's
// reason at the end) and hsdb's own worker messages (a lost context with
// the site it was at: about 250) whole.
func Printable(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		if len(s) > 64 {
			return strconv.QuoteToGraphic(s[:64]) + "…"
		}
		return strconv.QuoteToGraphic(s)
	}
	if len(s) > 1024 {
		return s[:1024] + "…"
	}
	return s
}
