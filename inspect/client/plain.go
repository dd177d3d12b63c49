package client

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PlainLine returns line with every control character (C0, DEL, C1: a
// newline, a terminal escape sequence), every bidirectional-text control
// (U+202E and the like, which reorder what a terminal shows) and every
// byte that is not UTF-8 written as a Go escape (\n, \x1b, \u202e), so
// that text a file carries (a capture's __metadata__ value, a tensor name,
// a file name, a config.json string) can neither add a line to a report,
// such as a forged "verdict: valid", nor drive the terminal. Front ends
// apply it to every line of a text report.
func PlainLine(line string) string { return plain(line, false) }

// PlainText is PlainLine for a message that may span lines on purpose (an
// error with a stack trace): newlines and tabs are kept, every other
// control character is escaped.
func PlainText(msg string) string { return plain(msg, true) }

func plain(s string, keepLines bool) string {
	escape := func(r rune, n int) bool {
		if keepLines && (r == '\n' || r == '\t') {
			return false
		}
		return (r == utf8.RuneError && n <= 1) || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
	}
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if escape(r, n) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !escape(r, n):
			b.WriteString(s[i : i+n])
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// MaxMessageBytes bounds an error message as a front end prints it
// (ClipMessage): a message that quotes what the user typed (a 2 MB `set
// var` value) is cut in the middle instead of echoed whole.
const MaxMessageBytes = 4096

// ClipMessage returns msg, or for a message over MaxMessageBytes its first
// 3072 and last 512 bytes (cut at rune boundaries) around "… [N bytes left
// out] …": the command, the field and the start of the value stay, and so
// does the message's ending (what was expected).
func ClipMessage(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	head, tail := 3072, len(msg)-512
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return fmt.Sprintf("%s… [%d bytes left out] …%s", msg[:head], tail-head, msg[tail:])
}
