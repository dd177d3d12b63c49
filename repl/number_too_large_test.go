package repl

import (
	"strings"
	"testing"
)

// TestNumbersPastIntNamed: a whole number past int64 was called something
// it is not. `ignore 1 99999999999999999999` said COUNT "is not a number",
// and `break layers.0-99999999999999999999` "want a-b with 0 <= a <= b",
// which the range satisfies; `ignore 1 -5` said "ignore: ignore: COUNT
// -5". Each now says what is wrong with the number (gdb: "Numeric
// constant too large."), once.
func TestNumbersPastIntNamed(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("break layers.1")
	f.AssertError("ignore 1 99999999999999999999", "ignore: COUNT 99999999999999999999 is too large (at most 9223372036854775807)")
	f.AssertError("ignore 1 -99999999999999999999", "ignore: COUNT -99999999999999999999: want 0 or more crossings")
	f.AssertError("ignore 1 x", `COUNT "x" is not a number`)
	f.buf.Reset()
	err := f.Term.Exec("ignore 1 -5")
	if err == nil || err.Error() != "ignore: COUNT -5: want 0 or more crossings" {
		t.Fatalf("ignore 1 -5: %v", err)
	}
	f.AssertError("break layers.0-99999999999999999999", `range "0-99999999999999999999": 99999999999999999999 is too large (at most 9223372036854775807)`)
	f.buf.Reset()
	if err := f.Term.Exec("break layers.3-1"); err == nil || !strings.Contains(err.Error(), "want a-b with 0 <= a <= b") {
		t.Fatalf("break layers.3-1: %v", err)
	}
}
