package repl

import (
	"strings"
	"testing"
)

// TestCheckEndsOnVerdict: the REPL's check and diff printed the report,
// whose last line is already the verdict, and then a bare "valid" or
// "invalid" (a file nothing could be compared in, which hsdb check calls
// "unreadable or nothing comparable", was "invalid"). The output now ends
// on the report's own verdict line, as hsdb check prints it: good.safetensors
// (the fixture generator's valid capture) is "valid"; reference.safetensors
// (HF's reference values: no hidden-state entries to compare) is
// "unreadable or nothing comparable".
func TestCheckEndsOnVerdict(t *testing.T) {
	f := newHFFake(t, 1)
	for _, c := range []struct{ cmd, last string }{
		{"check ../testdata/captures/good.safetensors --no-model", "  verdict: valid"},
		{"diff ../testdata/captures/good.safetensors", "  verdict: valid"},
		{"check ../testdata/captures/reference.safetensors", "  verdict: unreadable or nothing comparable"},
	} {
		out := strings.TrimRight(f.Exec(c.cmd), "\n")
		lines := strings.Split(out, "\n")
		if got := lines[len(lines)-1]; got != c.last {
			t.Errorf("%s: last line %q, want %q\n%s", c.cmd, got, c.last, out)
		}
	}
}
