package repl

import (
	"fmt"
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// TestLensNotesDivergedRanks: after `set var … --rank 1` (README's
// example) the logit lens joined rank 0's vocabulary shard, computed from
// rank 0's stream, with rank 1's, computed from its edited copy, and said
// nothing. Now it notes the rank whose copy differs in the rows it reads
// and by how much: row 5 (seq 0's last token) column 0 set to 1000 on
// rank 1, so max |Δ| = 1000 - stream[5, 0] (the value printed before,
// float32), by hand; no note before the edit, nor for an edit of every
// rank.
func TestLensNotesDivergedRanks(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.4")
	f.Exec("run")
	if out := f.Exec("lens 2"); strings.Contains(out, "note:") {
		t.Fatalf("lens before any edit:\n%s", out)
	}
	row := f.jsonExec("print stream[5, 0]")[0]["result"].(map[string]any)["ranks"].([]any)[1].(map[string]any)["values"].([]any)[0].([]any)
	old := float32(row[0].(float64))
	f.Exec("set var stream[5, 0] = 1000 --rank 1")
	want := fmt.Sprintf("note: rank 1's stream differs from rank 0's in the rows read (max |Δ| %.4g): each rank's vocabulary shard", float64(1000-old))
	f.AssertExec("lens 2", want)
	f.Exec("set var stream[5, 0] = 1000")
	if out := f.Exec("lens 2"); strings.Contains(out, "note:") {
		t.Fatalf("lens after an edit of every rank:\n%s", out)
	}
}

// TestInputWhileStoppedSaysNextRun: `input` at a stop set the batch of the
// next run without saying that the stopped pass keeps its own; it now
// notes it, and `info batch` still lists the stopped step's ids.
func TestInputWhileStoppedSaysNextRun(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("input ids 1,403")
	f.Exec("break layers.1")
	f.Exec("run")
	f.AssertExec("input ids 1,400,281", "note: the pass stopped at model.layers.1 in step 0 (prefill) keeps its own batch (`info batch` lists it); this one is for the next `run`\n")
	f.AssertExec("info batch", "  seq 0: 2 tokens [1, 403]")
	f.Exec("continue")
	if out := f.Exec("input ids 1,400"); strings.Contains(out, "note:") {
		t.Fatalf("input with no pass stopped:\n%s", out)
	}
	f.AssertExec("run", "tokens 2 (seq 0: 2)")
}

// TestBannerNamesEveryRanksDevice: the interactive banner named rank 0's
// device alone ("on 2 ranks, cpu:0"); it names each device once, in rank
// order, and the first and last of many. Expected text by hand.
func TestBannerNamesEveryRanksDevice(t *testing.T) {
	for _, c := range []struct {
		devs []string
		want string
	}{
		{[]string{"cpu:0"}, " on 1 rank, cpu:0 (why)."},
		{[]string{"cpu:0", "cpu:1"}, " on 2 ranks, cpu:0, cpu:1 (why)."},
		{[]string{"cuda:0", "cuda:0", "cuda:0", "cuda:0"}, " on 4 ranks, cuda:0 (why)."},
		{[]string{"cpu:0", "cpu:1", "cpu:2", "cpu:3", "cpu:4", "cpu:5", "cpu:6", "cpu:7"}, " on 8 ranks, cpu:0, …, cpu:7 (why)."},
	} {
		m := client.ModelInfo{Path: "p", Arch: "A", Layers: 5, World: len(c.devs), Devices: c.devs, DeviceWhy: "why"}
		if got := bannerText(m); !strings.Contains(got, "hsdb: p (A, 5 layers)"+c.want) {
			t.Errorf("banner %q lacks %q", got, c.want)
		}
	}
}
