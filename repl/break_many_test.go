package repl

import (
	"strconv"
	"strings"
	"testing"
)

// TestManyBreakpointsOneSiteBounded: with 20 breakpoints at one site, the
// note of the 21st `break` there and the stop line name the first 8 and
// say how many more (12 and 13), not each of them: 10,000 `break`s at five
// sites printed 58 MB, each line listing every breakpoint set before it,
// and a stop line listed every breakpoint that fired.
func TestManyBreakpointsOneSiteBounded(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	for i := 1; i <= 20; i++ {
		f.Exec("break layers.2")
	}
	f.buf.Reset()
	f.AssertExec("break layers.2", "Note: breakpoints 1, 2, 3, 4, 5, 6, 7, 8, and 12 more (`info break` lists them) also set at layers.2.")
	f.buf.Reset()
	f.AssertExec("run", "[breakpoint 1; breakpoint 2; breakpoint 3; breakpoint 4; breakpoint 5; breakpoint 6; breakpoint 7; breakpoint 8; and 13 more (`info break` lists them)]")
	out := f.buf.String()
	if strings.Contains(out, "breakpoint "+strconv.Itoa(9)+";") || strings.Contains(out, "breakpoint 21") {
		t.Fatalf("the stop line lists past the eighth:\n%s", out)
	}
}
