package repl

import (
	"strings"
	"testing"
)

// TestValuesShardFullColumns: print's column index applies to each rank's
// own tensor, and a sharded rank's line read "rank 1  [0:1, 2:4]
// sharded(dim=-1, 32:64 of 64)": columns 2:4 of the full q, to anyone who
// had just written `set var q[0, 2:4]` (full columns), though they were
// columns 34:36. The line names the full tensor's columns it shows. By
// hand: at tp 2 rank 1 holds q's columns 32:64, so its 2:4 are 34:36, and
// its values equal the gathered row's at 34:36; rank 0's 2:4 are 2:4.
func TestValuesShardFullColumns(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1.self_attn.attn")
	f.AssertExec("run", "Stopped at model.layers.1.self_attn.attn ")
	out := f.AssertExec("print q[0, 2:4]", "rank 0  [0:1, 2:4] = full columns 2:4  sharded(dim=-1, 0:32 of 64)", "rank 1  [0:1, 2:4] = full columns 34:36  sharded(dim=-1, 32:64 of 64)")
	r1 := lineAfter(out, "rank 1  ")
	full := lineAfter(f.Exec("print q[0, 34:36]"), "gathered")
	if r1 == "" || r1 != full {
		t.Errorf("rank 1's columns 2:4 %q, the full q's 34:36 %q", r1, full)
	}
	// A replicated tensor's columns are the full tensor's: no mapping.
	f.Exec("finish")
	if out := f.Exec("print output[0, 0:2]"); strings.Contains(out, "full columns") {
		t.Errorf("replicated output given full columns:\n%s", out)
	}
}

// lineAfter returns the line after the first line starting with prefix.
func lineAfter(out, prefix string) string {
	ls := strings.Split(out, "\n")
	for i, l := range ls {
		if strings.HasPrefix(l, prefix) && i+1 < len(ls) {
			return strings.TrimSpace(ls[i+1])
		}
	}
	return ""
}
