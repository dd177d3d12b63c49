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
