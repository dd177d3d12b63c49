package repl

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestInfoBatchShowsIDs: `info batch` at a stop listed each sequence's
// token count only ("seq 0: 6 tokens"); a user wants the ids the step
// runs and their text. Expected lines by hand from tok512.bin (llama2.c's
// format: 403 " Once", 407 " upon", 261 " a", 378 " time", 365 " happ",
// 400 " do", 281 " he", 350 " up"; the space after BOS is dropped as
// run.c drops it). Sequence 2 is BOS then ids 259..287 (30 ids): its line
// shows the first 16 (1, 259..273) and the last 8 (280..287) and says
// that 6 (274..279) were left out; --json lists every id. A decode step
// shows the one id each sequence runs and its position, its text as it
// follows the sequence (with the leading space Decode of it alone drops);
// the tail of a clipped line reads the same way (" c he pay mer wasom":
// 280..287 joined by hand).
func TestInfoBatchShowsIDs(t *testing.T) {
	f := newFake(t, 2)
	long := []string{"1"}
	for id := 259; id <= 287; id++ {
		long = append(long, strconv.Itoa(id))
	}
	f.Exec(batchCmd + " ; ids " + strings.Join(long, ","))
	f.Exec("break layers.2")
	f.Exec("run")
	out := f.Exec("info batch")
	want := []string{
		"step 0 (prefill): 3 sequences, 40 tokens",
		`  seq 0: 6 tokens [1, 403, 407, 261, 378, 365]  "Once upon a time happ"`,
		`  seq 1: 4 tokens [1, 400, 281, 350]  "do he up"`,
		"  seq 2: 30 tokens [1, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 270, 271, 272, 273, …, 280, 281, 282, 283, 284, 285, 286, 287] (6 ids left out)  " +
			`"the a s wnd theed to b and hin f wa" … " c he pay mer wasom"`,
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 5 || lines[4] != "" {
		t.Fatalf("info batch: want 4 lines:\n%s", out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Fatalf("info batch line %d:\n got %q\nwant %q", i, lines[i], w)
		}
	}
	var js []map[string]any
	obj := f.jsonExec("info batch")[0]
	if obj["kind"] != "step_batch" { // `input`'s object is kind "batch"
		t.Fatalf("info batch --json kind %v", obj["kind"])
	}
	res := obj["result"]
	b, _ := json.Marshal(res)
	if err := json.Unmarshal(b, &js); err != nil || len(js) != 3 {
		t.Fatalf("info batch --json: %s (%v)", b, err)
	}
	ids := js[2]["ids"].([]any)
	if len(ids) != 30 || ids[0].(float64) != 1 || ids[1].(float64) != 259 || ids[29].(float64) != 287 || js[2]["tokens"].(float64) != 30 {
		t.Fatalf("info batch --json seq 2: %v", js[2])
	}
	if js[0]["text"] != "Once upon a time happ" || js[1]["pos"].(float64) != 0 {
		t.Fatalf("info batch --json seq 0/1: %v %v", js[0], js[1])
	}
	// The decode step after the prefill: sequence 1's next token is fed
	// at position 4 (its 4 prompt tokens before it), one token each.
	f.Exec("continue")
	f.Exec("gen 1")
	out = f.Exec("info batch")
	if !strings.HasPrefix(out, "step 1 (decode): 3 sequences, 3 tokens\n") || !strings.Contains(out, "  seq 1: 1 token at position 4 [") || !strings.Contains(out, "  seq 2: 1 token at position 30 [") {
		t.Fatalf("info batch at a decode step:\n%s", out)
	}
	// A decode step's token reads as it follows the sequence: after "Once
	// upon" the model feeds 261 " a" (greedy), with its space, not "a".
	f.Exec("input ids 1,403,407")
	f.Exec("run")
	f.Exec("continue")
	f.Exec("gen 1")
	f.AssertExec("info batch", `  seq 0: 1 token at position 3 [261]  " a"`+"\n")
}
