package repl

import (
	"strings"
	"testing"
)

// TestTreeAtTP1SaysWhole: at tp 1 a column-parallel weight is not split;
// tree named it "split dim 0: r0 [172, 64]". It now says the dim it would
// split along and that the one rank holds it whole (by hand: gate_proj is
// column-parallel, dim 0; down_proj row-parallel, dim 1).
func TestTreeAtTP1SaysWhole(t *testing.T) {
	f := newFake(t, 1)
	out := f.AssertExec("tree layers.3.mlp", "· gate_proj.weight [172, 64]  split dim 0 at tp > 1 (one rank holds it whole)",
		"· weight [64, 172]  split dim 1 at tp > 1 (one rank holds it whole)")
	if strings.Contains(out, "r0 [") {
		t.Errorf("tp 1 tree lists a rank shard:\n%s", out)
	}
}
