package capture

import (
	"strings"
	"testing"
)

// TestFileText: a file's string is kept when short and printable, else
// Go-quoted and cut at MaxFileText bytes with its size; the expected
// strings are written by hand.
func TestFileText(t *testing.T) {
	long := strings.Repeat("é", 200)      // 400 bytes; byte 256 starts a rune
	odd := "a" + strings.Repeat("é", 200) // byte 256 is a continuation byte: cut at 255
	for _, c := range []struct{ in, want string }{
		{"cuda", "cuda"},
		{"/models/Kimi K2.5", "/models/Kimi K2.5"},
		{"", ""},
		{"a\nb", `"a\nb"`},
		{"\x1b[31mred", `"\x1b[31mred"`},
		{"x\u202ey", `"x\u202ey"`},
		{"\xff", `"\xff"`},
		{"tab\there", `"tab\there"`},
		{long, `"` + strings.Repeat("é", 128) + `"... (400 bytes)`},
		{odd, `"a` + strings.Repeat("é", 127) + `"... (401 bytes)`},
	} {
		if got := FileText(c.in); got != c.want {
			t.Errorf("FileText(%.40q) = %.80q, want %.80q", c.in, got, c.want)
		}
	}
	if got, want := QuoteFileText("ok"), `"ok"`; got != want {
		t.Errorf("QuoteFileText(ok) = %s, want %s", got, want)
	}
}
