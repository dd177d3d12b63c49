package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestGenerateSaysWhyNothingCame: a prompt whose first greedy choice is
// the model's eos_token_id generated nothing, printing an empty line (and
// "ids": null in --json) without a word of why. The stop ids are set by
// hand from the unstopped run (no eos, no tokenizer): eos = its first id
// gives no ids, `"ids":[]`, stopped_at that id and a note naming it
// (stderr in text mode); eos = its fourth id gives the three before it,
// stopped_at, and no note.
func TestGenerateSaysWhyNothingCame(t *testing.T) {
	full := generateIDs(t, eosFixture(t, "", "", ""))
	if len(full) < 4 || full[0] == full[3] || slices.Index(full, full[3]) != 3 || slices.Index(full, full[0]) != 0 {
		t.Fatalf("premise: the unstopped run %v needs distinct ids at 0 and 3 first seen there", full)
	}
	for _, tc := range []struct {
		eos  int32
		want int
	}{{full[0], 0}, {full[3], 3}} {
		dir := eosFixture(t, "1", itoaJSON(tc.eos), "")
		out, errs, code := runHsdb(t, "generate", "--model", dir, "--ids", "1,2,3", "-n", "64", "--json")
		if code != 0 {
			t.Fatalf("eos %d: exit %d: %s", tc.eos, code, errs)
		}
		var res struct {
			IDs       json.RawMessage `json:"ids"`
			StoppedAt *int32          `json:"stopped_at"`
			Notes     []string        `json:"notes"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		var ids []int32
		if err := json.Unmarshal(res.IDs, &ids); err != nil || ids == nil || len(ids) != tc.want {
			t.Errorf("eos %d: ids %s, want a list of %d", tc.eos, res.IDs, tc.want)
		}
		if res.StoppedAt == nil || *res.StoppedAt != tc.eos {
			t.Errorf("eos %d: stopped_at %v, want %d", tc.eos, res.StoppedAt, tc.eos)
		}
		named := len(res.Notes) == 1 && strings.Contains(res.Notes[0], "id "+strconv.Itoa(int(tc.eos))+", the model's eos_token_id")
		if named != (tc.want == 0) {
			t.Errorf("eos %d: notes %q, want the stop named only when nothing was generated", tc.eos, res.Notes)
		}
		_, errs, code = runHsdb(t, "generate", "--model", dir, "--ids", "1,2,3", "-n", "64")
		said := strings.Contains(errs, "nothing generated: the model's first choice after the prompt is id "+strconv.Itoa(int(tc.eos)))
		if code != 0 || said != (tc.want == 0) {
			t.Errorf("eos %d, text: exit %d, stderr %q", tc.eos, code, errs)
		}
	}
}
