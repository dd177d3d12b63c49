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
	} {
		if got := Clip(c.s, c.limit); got != c.want {
			t.Errorf("Clip(%q, %d) = %s, want %s", c.s, c.limit, got, c.want)
		}
	}
}
