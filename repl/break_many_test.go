package repl

import (
	"strconv"
	"strings"
	"testing"

	"hsdb/inspect/client"
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

// countingClient counts the calls of Breakpoints, which copies every
// breakpoint and watch.
type countingClient struct {
	client.Client
	lists int
}

func (c *countingClient) Breakpoints() ([]client.Breakpoint, error) {
	c.lists++
	return c.Client.Breakpoints()
}

// TestBreakNoteWithoutListing: `break` writes its "also set at" note from
// the session's index by site, without listing every breakpoint (each new
// one copied all those set before it: quadratic, 10,000 took 7 s). The
// 30th break at layers.2 (also written model.layers.2) names 1-8 and 21
// more; a tbreak that fired and went leaves 2-9 and 21 more for the next.
func TestBreakNoteWithoutListing(t *testing.T) {
	f := newFake(t, 1)
	cc := &countingClient{Client: f.c}
	f.c = cc
	f.Exec(batchCmd)
	f.Exec("tbreak layers.2")
	for i := 2; i <= 29; i++ {
		f.Exec("break model.layers.2")
	}
	f.buf.Reset()
	f.AssertExec("break layers.2", "Note: breakpoints 1, 2, 3, 4, 5, 6, 7, 8, and 21 more (`info break` lists them) also set at layers.2.")
	if cc.lists != 0 {
		t.Fatalf("break listed every breakpoint %d times", cc.lists)
	}
	f.Exec("run") // breakpoint 1, temporary, fires and goes
	f.buf.Reset()
	f.AssertExec("break layers.2", "Note: breakpoints 2, 3, 4, 5, 6, 7, 8, 9, and 21 more (`info break` lists them) also set at layers.2.")
}
