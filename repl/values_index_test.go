package repl

import "testing"

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
