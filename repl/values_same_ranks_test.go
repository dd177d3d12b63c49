package repl

import (
	"strings"
	"testing"
)

// TestValuesSameRanksOnce: at tp 4 the four copies of a replicated
// tensor are printed once, "ranks 0-3 … the same on each"; after
// `set var stream[0, 1] = 5 --rank 2` (by hand: only rank 2's copy
// changes, in one value) print shows ranks 0-1 once, rank 2 with the 5,
// and rank 3 apart from them (ranks are grouped only when consecutive),
// so the diverged rank stands out. JSON keeps one block per rank.
func TestValuesSameRanksOnce(t *testing.T) {
	f := newFake(t, 4)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	out := f.AssertExec("print stream[0, 0:2]", "ranks 0-3  [0:1, 0:2]  replicated, the same on each\n")
	if n := strings.Count(out, "  0: ["); n != 1 {
		t.Fatalf("equal copies printed %d times, want once:\n%s", n, out)
	}
	before := lineAfter(out, "ranks 0-3  ")
	f.Exec("set var stream[0, 1] = 5 --rank 2")
	out = f.AssertExec("print stream[0, 0:2]",
		"ranks 0-1  [0:1, 0:2]  replicated, the same on each\n", "rank 2  [0:1, 0:2]  replicated\n", "rank 3  [0:1, 0:2]  replicated\n")
	if got := lineAfter(out, "ranks 0-1  "); got != before {
		t.Errorf("ranks 0-1 after the edit %q, want the values before it %q", got, before)
	}
	if got := lineAfter(out, "rank 3  "); got != before {
		t.Errorf("rank 3 after the edit %q, want the values before it %q", got, before)
	}
	r2 := lineAfter(out, "rank 2  ")
	if !strings.HasSuffix(r2, ", 5]") || r2 == before {
		t.Errorf("rank 2 after the edit %q, want its column 1 = 5", r2)
	}
	res := f.jsonExec("print stream[0, 0:2]")
	if n := len(res[0]["result"].(map[string]any)["ranks"].([]any)); n != 4 {
		t.Errorf("json: %d rank blocks, want 4", n)
	}
}
