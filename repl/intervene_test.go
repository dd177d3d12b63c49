package repl

import (
	"encoding/json"
	"strings"
	"testing"
)

// The intervention commands through the REPL, text and --json: set var
// parses values and operators and reports the edit, the next stop marks
// it, info edits lists it, run resets it; lens and attn_probs answer with
// their reports; bad input is one error each.
func TestInterventionCommands(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1")
	f.Exec("break layers.2")
	f.Exec("run")
	f.AssertExec("set var stream[0, :4] = 0 --rank 1", "edit 1: model.layers.1 stream[0:1, 0:4] = 0 (step 0, rank 1)")
	f.AssertExec("set var residual = residual * 0.5", "edit 2: model.layers.1 residual[0:10, 0:64] * 0.5 (step 0, every rank)")
	f.AssertExec("set var hidden_states[1:3] = -inf --persist", "= -Inf", "persistent")
	f.AssertExec("ranks stream", "diverged")
	f.AssertExec("continue", "edited: edit 1:", "edited: edit 3:")
	f.AssertExec("info edits", "yes")
	f.AssertExec("lens 2", "stream → norm → lm_head", "seq 1 (row 9)")
	for _, bad := range []string{"set var stream = ", "set var stream = x", "set var stream = / 0", "set var stream", "set var stream = stream", "print attn_probs", "patch stream from"} {
		if err := f.Term.Exec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	f.Exec("delete")
	f.Exec("break layers.0.self_attn.attn")
	f.Exec("run")
	f.Exec("set json on")
	var r struct {
		Kind   string `json:"kind"`
		Result struct {
			Probs   [][]float64 `json:"probs"`
			RowSums []float64   `json:"row_sums"`
			Rank    int         `json:"rank"`
		} `json:"result"`
	}
	out := f.Exec("print attn_probs --head 5 --seq 1")
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Kind != "attn_probs" || len(r.Result.Probs) != 4 || len(r.Result.RowSums) != 4 || r.Result.Rank != 1 {
		t.Errorf("attn_probs JSON %s: want 4 rows of seq 1, head 5 on rank 1 (heads 4-7 of 8 at tp 2)", out)
	}
	var es struct {
		Result []struct {
			Persist bool `json:"persist"`
			Applied int  `json:"applied"`
		} `json:"result"`
	}
	f.Exec("continue")
	out = f.Exec("info edits")
	if err := json.Unmarshal([]byte(out), &es); err != nil || len(es.Result) != 1 || !es.Result[0].Persist || es.Result[0].Applied != 2 {
		t.Errorf("info edits after run: %s (want the persistent edit only, applied again by this run; %v)", out, err)
	}
	if !strings.Contains(f.Exec("delete edits"), "[]") {
		t.Errorf("delete edits left edits")
	}
}
