package debug

import (
	"errors"
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// TestCondLengthBounded: a condition longer than maxCondBytes (a script
// line of a million '(' or unary '-', well within the 16 MiB line bound)
// is refused naming its length and the bound; the recursive-descent parser
// recursed once per '(' or '-' and the process died with "fatal error:
// stack overflow" (3,000,000 '-' in 3.4 s and 1.3 GB). A condition at the
// bound, nested as deep as it allows, still parses.
func TestCondLengthBounded(t *testing.T) {
	for _, src := range []string{
		strings.Repeat("-", 3_000_000) + "1 > 0",
		strings.Repeat("(", 1_000_000) + "1" + strings.Repeat(")", 1_000_000) + " > 0",
		strings.Repeat("1+", 1_000_000) + "1 > 0",
	} {
		_, err := ParseCond(src, "")
		if !errors.Is(err, client.ErrCond) || !strings.Contains(err.Error(), "at most 4096 bytes") {
			t.Errorf("%.20s... (%d bytes): %.200v; want ErrCond naming the 4096-byte bound", src, len(src), err)
		}
		if err != nil && len(err.Error()) > 600 {
			t.Errorf("the refusal echoes %d bytes of the condition", len(err.Error()))
		}
	}
	n := (maxCondBytes - len("1 > 0")) / 2
	deep := strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + " > 0"
	if len(deep) > maxCondBytes {
		t.Fatalf("test condition is %d bytes", len(deep))
	}
	if _, err := ParseCond(deep, ""); err != nil {
		t.Errorf("%d nested parentheses (%d bytes): %v", n, len(deep), err)
	}
}
