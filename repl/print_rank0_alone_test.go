package repl

import (
	"strings"
	"testing"
)

// TestPrintRank0Alone: with rank 0's copy of a replicated tensor the one
// that diverged (perturb-rank on rank 0 at tp 4, a stale buffer on one
// GPU), `print` marked ranks 1, 2 and 3 DIVERGED — its column measures
// from rank 0 — while `ranks` and dump's refusal named rank 0: the table
// pointed at the three good copies. print now adds a note that ranks 1-3
// agree and rank 0's copy is the one that differs, and --json says
// rank0_alone. The fault on rank 3 instead marks rank 3 alone and needs
// no note; with no fault there is none either.
func TestPrintRank0Alone(t *testing.T) {
	const note = "note: ranks 1-3 agree with each other: rank 0's copy is the one that differs"
	for _, c := range []struct {
		fault string
		note  bool
	}{
		{"inject perturb-rank 0.5 at layers.1 --rank 0", true},
		{"inject perturb-rank 0.5 at layers.1 --rank 3", false},
		{"", false},
	} {
		f := newFake(t, 4)
		f.Exec(batchCmd)
		if c.fault != "" {
			f.Exec(c.fault)
		}
		f.Exec("break layers.1")
		f.Exec("run")
		out := f.Exec("print hidden_states")
		if got := strings.Contains(out, note); got != c.note {
			t.Errorf("%q: note %v, want %v:\n%s", c.fault, got, c.note, out)
		}
		res := f.jsonExec("print hidden_states")[0]["result"].(map[string]any)
		if got := res["rank0_alone"] == true; got != c.note {
			t.Errorf("%q: --json rank0_alone %v, want %v", c.fault, res["rank0_alone"], c.note)
		}
		if c.fault == "" {
			continue
		}
		// the table still marks from rank 0 (documented): rank 3 alone
		// is the one DIVERGED row, rank 0 alone makes three.
		if n := strings.Count(out, "DIVERGED"); (c.note && n != 3) || (!c.note && n != 1) {
			t.Errorf("%q: %d rows marked DIVERGED:\n%s", c.fault, n, out)
		}
	}
}
