package repl

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

// TestHistIDRanges: hist of a router's topk_ids with more than 64
// distinct ids (256 experts, DeepSeek-V3's n_routed_experts) draws a bar
// per range of whole ids, not float bins with fractional edges; before,
// it fell back to float bins ("[0, 12.8)"). Expected bars derived by
// hand: expert i chosen i%3+1 times, plus the bad ids -1 and 300 once
// each; 8 bars a side go to the ids outside [0, 256), so [0, 256) gets
// 48 bars of ceil(256/48) = 6 experts, [6k, 6k+5] chosen 1+2+3+1+2+3 = 12
// times and [252, 255] 1+2+3+1 = 7 times; -1 and 300 are shown apart, in
// the Bad style: [-1, -1] alone, and 300 in the 8th range of [256, 300]
// (45 ids, ceil(45/8) = 6 a range), [256+7·6, 300] = [298, 300].
func TestHistIDRanges(t *testing.T) {
	v := rangedIDs()
	ids := stats.IDsOf(v, 256)
	rep := &client.HistReport{Site: "model.layers.3.mlp.gate", Tensor: "topk_ids", Source: "gathered", Shape: []int{len(v)},
		Stats: stats.Of(v), Hist: stats.Histogram(v, 20), IDs: &ids}
	tm := &Term{Out: &bytes.Buffer{}, opts: defaultOptions(), terminal: true}
	tm.restyle()
	out := tm.histText(rep)
	if !strings.Contains(out, "min -1  max 300  distinct 258") || strings.Contains(out, "mean") {
		t.Fatalf("hist header:\n%s", out)
	}
	bar := func(lo, hi, n string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^\s*\[\s*` + lo + `,\s*` + hi + `\]\s+█+\s+` + n + `\s*$`)
	}
	for _, c := range [][3]string{{"0", "5", "12"}, {"6", "11", "12"}, {"246", "251", "12"}, {"252", "255", "7"}} {
		if !bar(c[0], c[1], c[2]).MatchString(out) {
			t.Errorf("want a bar [%s, %s] of %s in\n%s", c[0], c[1], c[2], out)
		}
	}
	if n := strings.Count(out, "█\x20") + strings.Count(out, "█\n"); n != 45 {
		t.Errorf("%d bars, want 45 (43 in [0, 256), -1 and 300):\n%s", n, out)
	}
	if regexp.MustCompile(`\d\.\d`).MatchString(out) {
		t.Errorf("a fractional edge:\n%s", out)
	}
	for _, bad := range []string{"[ -1,  -1]", "[298, 300]"} {
		if !strings.Contains(out, tm.st.Bad.Render(bad)) {
			t.Errorf("want %q outside [0,256) in the Bad style:\n%q", bad, out)
		}
	}
}

// rangedIDs are the ids of TestHistIDRanges and TestHistJSONIDRanges:
// expert i of 256 chosen i%3+1 times, then -1 and 300 (outside [0, 256)).
func rangedIDs() []float32 {
	var v []float32
	for id := range 256 {
		for range id%3 + 1 {
			v = append(v, float32(id))
		}
	}
	return append(v, -1, 300)
}
