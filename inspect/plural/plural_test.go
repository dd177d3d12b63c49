package plural

import "testing"

// TestN: English counts by hand.
func TestN(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{N(0, "token"), "0 tokens"},
		{N(1, "token"), "1 token"},
		{N(2, "token"), "2 tokens"},
		{N(-1, "step"), "-1 steps"},
		{Of(1, "entry", "entries"), "1 entry"},
		{Of(12, "entry", "entries"), "12 entries"},
		{"rank" + S(1), "rank"},
		{"rank" + S(8), "ranks"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
