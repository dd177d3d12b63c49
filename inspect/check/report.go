package check

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"hsdb/inspect/client"
)

// Report renders p for a front end as `diff` (diff) or `check` prints it,
// in the output asked (client.CheckRequest.Output: "", "json", "summary",
// "full"); Failed and Exit are the shared verdict (Verdict).
func (p *PathReport) Report(diff bool, output string) (client.CheckReport, error) {
	v := p.Verdict()
	r := client.CheckReport{Path: p.Path, Files: len(p.Files), Failed: v != VerdictValid, Exit: int(v)}
	for _, f := range p.Files {
		r.Comparable = r.Comparable || f.Comparable()
	}
	switch {
	case output == "json":
		r.Lines = p.JSONLines(diff)
	case output == "summary" || output == "" && len(p.Files) > 20:
		r.Lines = p.SummaryLines(3)
	case diff:
		for _, f := range p.Files {
			lines, _ := f.DiffLines()
			r.Lines = append(r.Lines, lines...)
		}
	default:
		r.Lines = p.Lines()
	}
	if output != "json" { // JSON escapes them itself
		for i, l := range r.Lines {
			r.Lines[i] = PlainLine(l)
		}
	}
	return r, p.ReadError()
}

// PlainLine returns line with every control character (C0, DEL, C1: a
// newline, a terminal escape sequence), every bidirectional-text control
// (U+202E and the like, which reorder what a terminal shows) and every
// byte that is not UTF-8 written as a Go escape (\n, \x1b, \u202e), so
// that text a capture file carries (a __metadata__ value, a tensor name,
// a file name) can neither add a line to a report, such as a forged
// "verdict: valid", nor drive the terminal.
func PlainLine(line string) string {
	clean := true
	for _, r := range line {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			clean = false
			break
		}
	}
	if clean {
		return line
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(line); i += w {
		r, n := utf8.DecodeRuneInString(line[i:])
		w = n
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, line[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x100 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(line[i : i+n])
		}
	}
	return b.String()
}

// ReadError returns why the path could not be read at all (the path
// itself, or every file it holds), or nil.
func (p *PathReport) ReadError() error {
	if p.Err != nil {
		return p.Err
	}
	if p.Unreadable() {
		return p.Files[0].Err
	}
	return nil
}
