package repl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestInjectCommand: `inject` through the REPL on stories260K at tp 2:
// listed by `info inject`, every run marked, the dump's manifest records
// it and check of the dump names the rows shifted by one; `inject clear`
// removes it and the next run is unmarked. Bad input is refused with the
// kinds, ranks or sites named.
func TestInjectCommand(t *testing.T) {
	f := newFake(t, 2)
	f.AssertExec("info inject", "no faults injected")
	f.AssertError("inject bogus", `inject: unknown fault "bogus" (want one of skip-allreduce,`)
	f.AssertError("inject perturb-rank --rank 5", "inject perturb-rank: --rank 5, the model runs on 2 ranks")
	f.AssertError("inject router-softmax", "inject router-softmax: the model has no GateLinear there to act on")
	f.AssertError("inject shift-rows at layers.99", "inject shift-rows: no site model.layers.99")
	f.AssertExec("inject shift-rows at layers.1", "1 fault injected into every run:", "1  shift-rows 1 at model.layers.1")
	f.Exec(batchCmd)
	f.Exec("capture layers 0,1")
	f.AssertExec("run", "INJECTED FAULTS (inject clear removes them): shift-rows 1 at model.layers.1")
	dir := filepath.Join(t.TempDir(), "d")
	f.Exec("dump " + dir)
	out := f.Exec("inject clear")
	if !strings.Contains(out, "cleared 1 fault\nno faults injected") {
		t.Fatalf("inject clear: %s", out)
	}
	f.AssertExec("check "+dir, "written under INJECTED FAULTS", "matches stream of layer 1 with rows shifted by +1 (row i holds token i+1)")
	if out := f.Exec("run"); strings.Contains(out, "INJECTED") {
		t.Fatalf("still marked after inject clear: %s", out)
	}
	f.AssertExec("help inject", "router-softmax", "TRT-Model-Connect #662", "vLLM #13232")
}

// TestInjectShowsAtStops: a stop under perturb-rank says it is injected,
// and `ranks` and `print` show rank 1's copy diverged from rank 0's; after
// `inject clear` the ranks agree again.
func TestInjectShowsAtStops(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("inject perturb-rank at layers.1")
	f.Exec("break layers.1")
	f.AssertExec("run", "INJECTED FAULTS (inject clear removes them): perturb-rank at model.layers.1 on rank 1")
	f.AssertExec("ranks hidden_states", "0-1    diverged")
	f.AssertExec("print hidden_states", "DIVERGED")
	f.Exec("inject clear")
	if out := f.Exec("run"); strings.Contains(out, "INJECTED") {
		t.Fatalf("%s", out)
	}
	if out := f.Exec("ranks hidden_states"); strings.Contains(out, "diverged") {
		t.Fatalf("after inject clear: %s", out)
	}
}
