package repl

import (
	"math"
	"strings"
	"testing"
)

// TestTopNoFiniteMedian: `top --json` on a tensor with no finite value
// reported "median_abs": 0, a median no element has; it is null (and the
// text says there is no finite value). With some finite values the median
// is over those alone. Values planted with set var at model.layers.1
// (hidden_states [10, 64], stories260K at tp 1) and derived by hand.
func TestTopNoFiniteMedian(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.1")
	f.AssertExec("run", "Stopped at model.layers.1 ")
	top := func() map[string]any {
		t.Helper()
		res := f.jsonExec("top hidden_states 2")
		if len(res) != 1 || res[0]["result"] == nil {
			t.Fatalf("top --json: %v", res)
		}
		return res[0]["result"].(map[string]any)
	}
	for _, v := range []string{"nan", "inf", "-inf"} {
		f.Exec("set var hidden_states = " + v)
		r := top()
		if m, ok := r["median_abs"]; !ok || m != nil {
			t.Errorf("all %s: median_abs %v (present %v), want null", v, m, ok)
		}
		if ch, ok := r["channels"].([]any); !ok || len(ch) != 0 {
			t.Errorf("all %s: channels %v, want []", v, r["channels"])
		}
		f.AssertExec("top hidden_states 2", "no finite value")
	}
	// Mixed: row 0 NaN, row 1 +Inf, rows 2-5 -3, rows 6-9 0.5: 512 finite
	// |values|, half 0.5 and half 3, so the median is (0.5 + 3) / 2 =
	// 1.75; the top channels are -3 first met at row 2 (channels 0 and 1,
	// ties by column), ratio 3 / 1.75.
	f.Exec("set var hidden_states[0, :] = nan")
	f.Exec("set var hidden_states[1, :] = inf")
	f.Exec("set var hidden_states[2:6, :] = -3")
	f.Exec("set var hidden_states[6:10, :] = 0.5")
	r := top()
	if m, ok := r["median_abs"].(float64); !ok || m != 1.75 {
		t.Fatalf("mixed: median_abs %v, want 1.75", r["median_abs"])
	}
	ch := r["channels"].([]any)
	if len(ch) != 2 {
		t.Fatalf("mixed: channels %v", ch)
	}
	for i, c := range ch {
		c := c.(map[string]any)
		ratio, _ := c["ratio_to_median"].(float64)
		if c["channel"] != float64(i) || c["row"] != 2.0 || c["value"] != -3.0 || !(math.Abs(ratio-3/1.75) <= 1e-12) {
			t.Errorf("mixed: channel %d %v, want channel %d row 2 value -3 ratio %g", i, c, i, 3/1.75)
		}
	}
	if out := f.Exec("top hidden_states 2"); !strings.Contains(out, "1.714") {
		t.Errorf("mixed text:\n%s\nwant the ratio 1.714", out)
	}
}
