package client

import (
	"strings"
	"testing"
)

// TestParseLayersSaysWhatIsWrong: a range written backwards (3-1) was
// called "not a non-negative integer or range a-b", which it is, and the
// word eagle3, which `hsdb capture --layers` takes, got the same words
// from check and diff. Now each says what to write; a good list still
// parses in the order given.
func TestParseLayersSaysWhatIsWrong(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"3-1", `layer range "3-1" runs backwards: write 1-3`},
		{"0,5-2", `layer range "5-2" runs backwards: write 2-5`},
		{"eagle3", "eagle3 is taken where layers are captured"},
		{"-1", `layer "-1" is not a non-negative integer or range a-b`},
	} {
		_, err := ParseLayers(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseLayers(%q): %v; want %q", c.in, err, c.want)
		}
	}
	got, err := ParseLayers("3, 0-2")
	if err != nil || len(got) != 4 || got[0] != 3 || got[1] != 0 || got[3] != 2 {
		t.Errorf("ParseLayers(\"3, 0-2\") = %v, %v; want [3 0 1 2]", got, err)
	}
}
