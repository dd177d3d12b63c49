package client

import (
	"strings"
	"testing"
)

// TestParseRangeEmptyText: `--tokens=` (an empty value) parsed to
// Range{0, 1}, the batch's first row, as if `--tokens 0` had been typed:
// with no text before or after a colon, nothing names a row. It is refused
// naming the flag's text; ":" (every row, Python's a[:]) still parses to
// the open range [0, end), and "0" to one row, by hand.
func TestParseRangeEmptyText(t *testing.T) {
	for _, s := range []string{"", " ", "\t"} {
		r, err := ParseRange(s)
		if err == nil {
			t.Fatalf("ParseRange(%q) = %+v, nil; want an error", s, r)
		}
		if !strings.Contains(err.Error(), "range") {
			t.Fatalf("ParseRange(%q): error %q does not say what it parsed", s, err)
		}
	}
	if r, err := ParseRange(":"); err != nil || r != (Range{Lo: 0, Hi: -1}) {
		t.Fatalf(`ParseRange(":") = %+v, %v; want {0 -1} (every row)`, r, err)
	}
	if r, err := ParseRange("0"); err != nil || r != (Range{Lo: 0, Hi: 1}) {
		t.Fatalf(`ParseRange("0") = %+v, %v; want {0 1}`, r, err)
	}
}
