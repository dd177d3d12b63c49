package repl

import (
	"strconv"
	"strings"
	"testing"
)

// TestInputClipsLongSequence: setting a batch (`input ids`, `input file`)
// echoed every id and the whole text of each sequence shown — 257 ids and
// a paragraph per story of stories200.jsonl, four at a time — while `info
// batch` at a stop clips a sequence over 24 ids to its first 16 and last
// 8. The echo now clips the same way; `input` alone and --json still list
// every id. Expected line by hand as in TestInfoBatchShowsIDs (BOS then
// ids 259..287: 6 ids, 274..279, left out; text from tok512.bin).
func TestInputClipsLongSequence(t *testing.T) {
	f := newFake(t, 1)
	long := []string{"1"}
	for id := 259; id <= 287; id++ {
		long = append(long, strconv.Itoa(id))
	}
	cmd := "input ids 1,400,281,350 ; ids " + strings.Join(long, ",")
	want := "  seq 1: 30 tokens [1, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 270, 271, 272, 273, …, 280, 281, 282, 283, 284, 285, 286, 287] (6 ids left out)  " +
		`"the a s wnd theed to b and hin f wa" … " c he pay mer wasom"`
	out := f.AssertExec(cmd, `  seq 0: [1, 400, 281, 350]  "do he up"`, want)
	if strings.Contains(out, "274") {
		t.Errorf("the echo lists the ids it says it left out:\n%s", out)
	}
	f.AssertExec("input", "  seq 1: ["+strings.Join(long, ", ")+"]")
	seqs := f.jsonExec(cmd)[0]["result"].(map[string]any)["seqs"].([]any)
	if len(seqs) != 2 || len(seqs[1].([]any)) != 30 {
		t.Errorf("--json seqs: %v", seqs)
	}
}
