package repl

import (
	"strings"
	"testing"
)

// TestDiffRank0ColumnOnlyWithReplicas: at --tp 1 print's table had a
// "|Δ| vs rank0" column left empty on every row. The column is shown only
// where a row has a value: a replicated tensor on 2 ranks (rank 1's copy of
// a decoder layer's stream is rank 0's: |Δ| 0, rank 0's own cell empty);
// not at tp 1 and not for gate_up_proj's gate, sharded by columns at tp 2.
// The JSON says the same: max_abs_diff_rank0 only on rank 1 of the
// replicated tensor. The default statistics end with l2, nan, inf.
func TestDiffRank0ColumnOnlyWithReplicas(t *testing.T) {
	for _, c := range []struct {
		tp     int
		site   string
		tensor string
		column bool
	}{
		{1, "layers.2", "stream", false},
		{2, "layers.2", "stream", true},
		{2, "layers.3.mlp.gate_up_proj", "gate", false},
	} {
		f := newFake(t, c.tp)
		f.Exec(batchCmd)
		f.Exec("break " + c.site)
		f.Exec("run")
		out := f.Exec("print " + c.tensor)
		lines := strings.Split(out, "\n")
		if c.column {
			if !strings.HasSuffix(lines[1], "inf  |Δ| vs rank0") || !strings.HasSuffix(lines[3], "    0    0             0") {
				t.Fatalf("tp %d %s: want the column with rank 1's |Δ| 0:\n%s", c.tp, c.tensor, out)
			}
		} else if !strings.HasSuffix(lines[1], "l2  nan  inf") || strings.Contains(out, "rank0") {
			t.Fatalf("tp %d %s: want no |Δ| vs rank0 column:\n%s", c.tp, c.tensor, out)
		}
		res := f.jsonExec("print " + c.tensor)[0]["result"].(map[string]any)
		for i, r := range res["ranks"].([]any) {
			_, has := r.(map[string]any)["max_abs_diff_rank0"]
			if want := c.column && i == 1; has != want {
				t.Fatalf("tp %d %s json rank %d: max_abs_diff_rank0 present %v, want %v", c.tp, c.tensor, i, has, want)
			}
		}
	}
}
