package repl

import (
	"strings"
	"testing"
)

// TestValuesColumnErrorNamesView: a column index that selects nothing is
// reported against the widest view printed — the full (gathered) tensor of
// a sharded one, 64 columns, not rank 0's 32-column shard — and a rank is
// named as a rank, not as a bare number in parentheses.
func TestValuesColumnErrorNamesView(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1.self_attn.attn")
	f.AssertExec("run", "Stopped at model.layers.1.self_attn.attn ")
	f.AssertExec("print q", "sharded(dim=-1, 0:32 of 64)", "gathered  [10, 64]")
	f.AssertError("print q[0, 64]", "q (gathered): column index 64 is out of range for size 64")
	f.AssertError("print q[0, 100:]", "q (gathered): column slice selects nothing of size 64")
	f.AssertError("print q[0, 40] --rank 1", "q (rank 1): column index 40 is out of range for size 32")
	f.AssertError("print hidden_states[0, 64] --rank 0", "no such tensor") // the attn site shows q, k, attn_out
	f.AssertError("print attn_out[0, 64] --rank 0", "attn_out (rank 0): column index 64 is out of range for size")
}

// TestValuesRowErrorNoFakeIndex: a row index past the rows was reported
// as "q[10, 32]: row index 10 is out of range for size 10": rank 0's
// shard shape written where an index goes, read as the index the user
// typed and as if q were 32 wide (it is 64: two shards of 32). The error
// names the tensor and the rows selected (10 tokens of the batch; 3 with
// --tokens 2:5), counted by hand from batchCmd.
func TestValuesRowErrorNoFakeIndex(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1.self_attn.attn")
	f.AssertExec("run", "Stopped at model.layers.1.self_attn.attn ")
	for _, c := range []struct{ cmd, want string }{
		{"print q[10, 0]", "q: row index 10 is out of range for size 10 (the 10 rows selected)"},
		{"print q[3, 0] --tokens 2:5", "q: row index 3 is out of range for size 3 (the 3 rows selected)"},
	} {
		f.buf.Reset()
		err := f.Term.Exec(c.cmd)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "[10, 32]") {
			t.Errorf("%s: %v, want %q and no shard shape", c.cmd, err, c.want)
		}
	}
}
