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
	f.assertVerdictFails("check "+dir, "written under INJECTED FAULTS", "matches stream of layer 1 with rows shifted by +1 (row i holds token i+1)")
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

// TestInjectRefusesArgsItIgnores: an argument a fault does not read, or a
// VALUE it cannot use, is refused naming the kind, the argument and what
// it takes; nothing is injected. Before, each was accepted, listed and
// written into a dump's manifest while the run used something else:
// shift-rows 0.5 shifted by int(0.5) = 0, shift-rows 1e400 by an
// undefined conversion of +Inf, shift-rows 0 by the default 1,
// scale-residual 0 by 0.5, vocab-padding 3 and no-residual --rank 1 on
// every rank with the value or rank dropped, skip-allreduce --token 4
// without a token; scale-residual 1e-46 by float32's 0, perturb-rank 1e-10
// by float32's 1 + 1e-10 = 1 (no change at all).
func TestInjectRefusesArgsItIgnores(t *testing.T) {
	f := newFake(t, 2)
	for _, c := range [][2]string{
		{"inject shift-rows 0.5", "inject shift-rows: VALUE 0.5: want a whole number of tokens"},
		{"inject shift-rows 1e400", "inject shift-rows: VALUE +Inf: want a finite number"},
		{"inject shift-rows 1e12", "inject shift-rows: VALUE 1e+12: want a whole number of tokens between -2147483647 and 2147483647"},
		{"inject shift-rows 0", "inject shift-rows: VALUE 0: 0 stands for no VALUE"},
		{"inject shift-rows 1 2", `inject: unexpected "2" (usage: inject FAULT [VALUE]`},
		{"inject scale-residual nan", "inject scale-residual: VALUE NaN: want a finite number"},
		{"inject scale-residual 0", "inject scale-residual: VALUE 0: 0 stands for no VALUE"},
		{"inject perturb-rank -inf", "inject perturb-rank: VALUE -Inf: want a finite number"},
		{"inject perturb-rank 1.7e308", "inject perturb-rank: VALUE 1.7e+308: want a number float32 holds"},
		{"inject vocab-padding 3", "inject vocab-padding: takes no VALUE (got 3); perturb-rank, scale-residual, shift-rows take one"},
		{"inject skip-allreduce --token 4", "inject skip-allreduce: takes no --token (got 4); nan-at and chunk-no-context take one"},
		{"inject chunk-no-context --token 2 --channel 3", "inject chunk-no-context: takes no --channel (got 3); nan-at takes one"},
		{"inject no-residual --rank 1", "inject no-residual: takes no --rank (got 1): it changes what is recorded"},
		// float32 rounds these to no fault or another: scale-residual
		// 1e-46 scaled by 0, perturb-rank 1e-10 by 1 (ranks stayed equal).
		{"inject scale-residual 1e-46", "inject scale-residual: VALUE 1e-46: float32 holds it as 0 (the smallest it holds is 1.401298464324817e-45)"},
		{"inject perturb-rank -1e-50", "inject perturb-rank: VALUE -1e-50: float32 holds it as 0"},
		{"inject perturb-rank 1e-10", "inject perturb-rank: VALUE 1e-10: the rank's copy is scaled by 1 + VALUE, which float32 rounds to 1 (no change); want |VALUE| of at least 6e-08"},
		{"inject perturb-rank -2e-8", "which float32 rounds to 1"},
	} {
		f.AssertError(c[0], c[1])
	}
	f.AssertExec("info inject", "no faults injected")
	// What each kind does read is still taken.
	f.AssertExec("inject shift-rows -2", "shift-rows -2")
	f.AssertExec("inject perturb-rank 6e-8", "perturb-rank 6e-08")
	f.AssertExec("inject scale-residual 2e-45", "scale-residual 2e-45")
	f.AssertExec("inject keep-shard --rank 1", "keep-shard on rank 1")
	f.AssertExec("inject nan-at --token 1 --channel 2", "nan-at (token 1, channel 2)")
	f.AssertExec("inject skip-allreduce --rank 0", "skip-allreduce on rank 0")
}
