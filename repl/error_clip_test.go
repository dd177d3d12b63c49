package repl

import (
	"fmt"
	"strings"
	"testing"
)

// TestErrorQuotingHugeValueClipped: `set var` with a 200,000-byte value
// that is not a number quoted the whole value back in its error (2 MB in,
// 2 MB out). The printed error keeps its start (the command and the first
// 3072 bytes of the message) and its last 512 bytes (what a value must
// be), and says how many bytes it left out: the message's length less
// 3072 and 512.
func TestErrorQuotingHugeValueClipped(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	err := f.Term.Exec("set var stream[0, 1] = " + strings.Repeat("x", 200000))
	if err == nil {
		t.Fatal("a non-number value was accepted")
	}
	f.buf.Reset()
	f.Term.PrintError(err)
	out := f.buf.String()
	for _, want := range []string{`set var: value "xxx`, "want a number, nan, inf or -inf", fmt.Sprintf("… [%d bytes left out] …", len(err.Error())-3072-512)} {
		if !strings.Contains(out, want) {
			t.Errorf("printed error lacks %q", want)
		}
	}
	if len(out) > 5000 {
		t.Errorf("printed error of %d bytes, want under 5000", len(out))
	}
}
