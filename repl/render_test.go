package repl

import (
	"bytes"
	"strings"
	"testing"

	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

// TestBadValuesStandOut: with colour on, a NaN count and a diverged rank
// are rendered in the Bad style (bold red) and ordinary numbers are not;
// with colour off the same table is plain text.
func TestBadValuesStandOut(t *testing.T) {
	d := 0.5
	rep := &client.TensorReport{Site: "model.layers.1", Tensor: "residual", Rows: client.Range{Lo: 0, Hi: 4}, Seq: -1, Ranks: []client.RankStats{
		{Rank: 0, Shape: []int{4, 8}, DType: "bf16", Shard: "replicated", Stats: stats.Stats{Count: 32, NaN: 3, Mean: 1.25}},
		{Rank: 1, Shape: []int{4, 8}, DType: "bf16", Shard: "replicated", Stats: stats.Stats{Count: 32, Mean: 1.5}, DiffRank0: &d, Diverged: true},
	}}
	var buf bytes.Buffer
	tm := &Term{Out: &buf, opts: defaultOptions(), terminal: true}
	tm.restyle()
	bad := tm.st.Bad.Render("3")
	if bad == "3" {
		t.Fatal("colour on renders Bad as plain text")
	}
	out := tm.printText(rep)
	if !strings.Contains(out, bad) || !strings.Contains(out, tm.st.Bad.Render("0.5 DIVERGED")) || strings.Contains(out, tm.st.Bad.Render("1.25")) {
		t.Fatalf("colour:\n%q", out)
	}
	tm.opts.colour = "off"
	tm.restyle()
	plain := tm.printText(rep)
	if strings.Contains(plain, "\x1b[") || !strings.Contains(plain, "0.5 DIVERGED") {
		t.Fatalf("plain:\n%q", plain)
	}
}

// TestInfoRanksWorkers: `info ranks` with rank workers prints each rank's
// worker under the rank line: pid, host and state with its site, a stage
// when the rank has several workers, and a failed one marked FAILED with
// its report (lines written out by hand).
func TestInfoRanksWorkers(t *testing.T) {
	tm := &Term{Out: &bytes.Buffer{}, opts: defaultOptions()}
	tm.opts.colour = "off"
	tm.restyle()
	rs := []client.RankInfo{
		{Rank: 0, Device: "cpu:0", ActDType: "f32", Workers: []client.WorkerInfo{{PID: 101, Host: "h", State: "at a stop", Site: "model.layers.2"}}},
		{Rank: 1, Device: "cpu:1", ActDType: "f32", Workers: []client.WorkerInfo{{PID: 102, Host: "h", State: "failed", Reason: "rank worker failed: rank 1 (pid 102 on h): the worker died (signal: killed)"}}},
		{Rank: 2, Device: "cpu:2", ActDType: "f32", Workers: []client.WorkerInfo{{Stage: 0, PID: 103, Host: "h", State: "idle"}, {Stage: 1, PID: 104, Host: "g", State: "stopped by a signal", Site: "model.layers.4"}}},
	}
	want := "rank 0  cpu:0  activations f32\n" +
		"  worker pid 101 on h: at a stop at model.layers.2\n" +
		"rank 1  cpu:1  activations f32\n" +
		"  worker pid 102 on h: FAILED: rank worker failed: rank 1 (pid 102 on h): the worker died (signal: killed)\n" +
		"rank 2  cpu:2  activations f32\n" +
		"  stage 0 worker pid 103 on h: idle\n" +
		"  stage 1 worker pid 104 on g: stopped by a signal at model.layers.4 (it answers nothing until continued; Ctrl-C abandons a request to it and ends it)\n"
	if got := tm.rankInfoText(rs); got != want {
		t.Errorf("info ranks:\n%s\nwant:\n%s", got, want)
	}
}
