package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGenerateSaysNClamped: -n past max_position_embeddings (64 in
// testdata/hf/llama/config.json) was clamped to it without a word, so
// -n 100 gave 64 − 3 + 1 = 62 ids for a 3-token prompt (positions 2..63
// each choose one) and nothing said why not 98. A note now says so, in
// --json's notes and on stderr; -n 64 (not past it) gets none. The
// model's eos is removed so that only the position bound stops it.
func TestGenerateSaysNClamped(t *testing.T) {
	dir := eosFixture(t, "", "", "")
	out, errs, code := runHsdb(t, "generate", "--model", dir, "--ids", "1,2,3", "-n", "100", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		IDs       []int32  `json:"ids"`
		StoppedAt *int32   `json:"stopped_at"`
		Notes     []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if res.StoppedAt != nil {
		t.Fatalf("premise: the run stopped at id %d before the position bound", *res.StoppedAt)
	}
	want := "-n 100 is past max_position_embeddings 64: generation ran 64 positions (62 generated after the 3-token prompt"
	if len(res.IDs) != 62 || len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], want) {
		t.Errorf("%d ids, notes %q; want 62 and %q", len(res.IDs), res.Notes, want)
	}
	_, errs, code = runHsdb(t, "generate", "--model", dir, "--ids", "1,2,3", "-n", "100")
	if code != 0 || !strings.Contains(errs, "hsdb generate: note: "+want) {
		t.Errorf("text: exit %d, stderr %q", code, errs)
	}
	out, errs, code = runHsdb(t, "generate", "--model", dir, "--ids", "1,2,3", "-n", "64", "--json")
	if code != 0 || strings.Contains(out, "notes") || !strings.Contains(out, `"ids":[`) {
		t.Errorf("-n 64: exit %d, %s %s; want no note", code, out, errs)
	}
}
