package quote

import "testing"

// The expected strings are written by hand from strconv.Quote's rules.
func TestClip(t *testing.T) {
	for _, c := range []struct {
		s     string
		limit int
		want  string
	}{
		{"abcd", 4, `"abcd"`},
		{"abcdef", 4, `"abcd"... (6 bytes)`},
		{"a\nb", 8, `"a\nb"`},
		// "é" is 2 bytes (c3 a9): a cut after its first byte goes back to "ab".
		{"abé", 3, `"ab"... (4 bytes)`},
		{"\x1b[2J", 1, `"\x1b"... (4 bytes)`},
		{"xy", -1, `""... (2 bytes)`},
		{"", 0, `""`},
		// Bytes that are not UTF-8 (a binary tiktoken token) are kept up
		// to the limit; cutting back to a character's start had cut them
		// to nothing (`""`) or to the last ASCII byte before them.
		{"\x80\x80\x80\x80\x80\x80", 4, `"\x80\x80\x80\x80"... (6 bytes)`},
		{"a\x80\x80\x80", 3, `"a\x80\x80"... (4 bytes)`},
		{"\xff\xfe\xfd\xfc", 2, `"\xff\xfe"... (4 bytes)`},
		// "😀" is 4 bytes (f0 9f 98 80): a cut inside it goes back to "ab".
		{"ab😀c", 5, `"ab"... (7 bytes)`},
		{"ab😀c", 6, `"ab😀"... (7 bytes)`},
	} {
		if got := Clip(c.s, c.limit); got != c.want {
			t.Errorf("Clip(%q, %d) = %s, want %s", c.s, c.limit, got, c.want)
		}
	}
}
