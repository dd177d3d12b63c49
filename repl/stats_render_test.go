package repl

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

// TestTopZeroMedianShowsDash: at a DeepSeek MoE layer's experts, 5 tokens
// × top-2 land on few of the 8 experts, so the median |expert_load| is 0
// (hand count: the fixture routes all 10 picks to 2 experts). top shows
// "—" for the ratio instead of +Inf, JSON null, and no token for the
// [1, 8] load, whose row is not a token.
func TestTopZeroMedianShowsDash(t *testing.T) {
	e, err := engine.Open("../testdata/hf/deepseek_v3", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	f := newFakeOn(t, hsdbg.New(e), buf)
	t.Cleanup(f.Close)
	f.Exec("input ids 1,2,3,4,5")
	f.Exec("break layers.1.mlp.experts")
	f.Exec("run")
	// The load's values, to find the median by hand.
	vals := f.jsonExec("print expert_load[0, :]")[0]["result"].(map[string]any)["ranks"].([]any)[0].(map[string]any)["values"].([]any)[0].([]any)
	zeros := 0
	for _, v := range vals {
		if v.(float64) == 0 {
			zeros++
		}
	}
	if zeros <= len(vals)/2 {
		t.Fatalf("load %v: the fixture no longer has a zero median", vals)
	}
	out := f.AssertExec("top expert_load 3", "median |value| 0 (no ratio")
	if strings.Contains(out, "Inf") {
		t.Fatalf("top prints Inf:\n%s", out)
	}
	rows := tableRows(out)
	for _, r := range rows[3:] {
		// # channel value ×median row: no token, seq or pos.
		if len(r) != 5 || r[3] != "—" || r[4] != "0" {
			t.Fatalf("top row %v, want 5 fields with ratio — and row 0:\n%s", r, out)
		}
	}
	for _, c := range f.jsonExec("top expert_load 3")[0]["result"].(map[string]any)["channels"].([]any) {
		m := c.(map[string]any)
		if r, ok := m["ratio_to_median"]; !ok || r != nil || m["token"].(float64) != -1 {
			t.Fatalf("JSON channel %v: want ratio_to_median null, token -1", m)
		}
	}
}

// TestAllNaNStatsShowDash: token 1's embedding set to NaN makes
// embed_tokens' first row all NaN: print shows "—" for mean, std, min,
// max, absmax and l2 (not 0), the NaN count 64, JSON null; hist says there
// is no finite value.
func TestAllNaNStatsShowDash(t *testing.T) {
	f := newFakeWith(t, 1, func(emb []float32) {
		for i := range 64 {
			emb[1*64+i] = float32(math.NaN())
		}
	})
	f.Exec("input ids 1,403,407")
	f.Exec("break embed_tokens")
	f.Exec("run")
	rows := tableRows(f.Exec("print hidden_states --tokens 0:1"))
	// rank shape(2) dtype shard mean std min max absmax l2 nan inf
	if r := rows[2]; strings.Join(r[5:], " ") != "— — — — — — 64 0" {
		t.Fatalf("all-NaN row %v", r)
	}
	st := f.jsonExec("print hidden_states --tokens 0:1")[0]["result"].(map[string]any)["ranks"].([]any)[0].(map[string]any)
	for _, k := range []string{"mean", "std", "min", "max", "absmax", "l2"} {
		if v, ok := st[k]; !ok || v != nil {
			t.Errorf("JSON %s = %v, want null", k, v)
		}
	}
	if st["nan"].(float64) != 64 {
		t.Errorf("JSON nan %v", st["nan"])
	}
	f.AssertExec("hist hidden_states --tokens 0:1", "mean —  std —  min —  max —", "no finite values", "not shown: 64 NaN, 0 Inf")
	f.opts.json = true
	f.buf.Reset()
	if err := f.Term.Exec("hist hidden_states --tokens 0:1"); err != nil {
		t.Fatal(err)
	}
	if out := f.buf.String(); !strings.Contains(out, `"hist":{"lo":null,"hi":null,"counts":[],"nan":64,"inf":0}`) || !strings.Contains(out, `"mean":null`) {
		t.Fatalf("JSON hist: %s", out)
	}
	f.opts.json = false
	// With the other two tokens in, the statistics are defined again.
	if r := tableRows(f.Exec("print hidden_states"))[2]; r[5] == "—" || r[11] != "64" {
		t.Fatalf("whole tensor row %v", r)
	}
}

// TestHistConstantTensorSingleValue: token 1's embedding set to 0.5 makes
// a constant [1, 64] row: hist shows the one value as [0.5, 0.5] with all
// 64 elements; a spread tensor's last bin is closed too.
func TestHistConstantTensorSingleValue(t *testing.T) {
	f := newFakeWith(t, 1, func(emb []float32) {
		for i := range 64 {
			emb[1*64+i] = 0.5
		}
	})
	f.Exec("input ids 1,403,407")
	f.Exec("break embed_tokens")
	f.Exec("run")
	out := f.Exec("hist hidden_states --tokens 0:1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; len(lines) != 3 || !strings.HasPrefix(last, "[0.5, 0.5]") || !strings.HasSuffix(last, " 64") {
		t.Fatalf("constant hist:\n%s", out)
	}
	f.Exec("set bins 2")
	lines = strings.Split(strings.TrimSpace(f.Exec("hist hidden_states")), "\n")
	if !strings.HasSuffix(strings.Fields(lines[2])[1], ")") || !strings.HasSuffix(strings.Fields(lines[3])[1], "]") {
		t.Fatalf("bins: first half-open, last closed:\n%s", strings.Join(lines, "\n"))
	}
}

// TestTopTokenIsBatchToken: at lm_head the logits have one row per
// sequence (its last token: batch tokens 5 and 9 of 6+4); top names the
// batch token, its sequence and position, and the logits row, found here
// by scanning the reference logits.
func TestTopTokenIsBatchToken(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break lm_head")
	f.Exec("run")
	v := reference(t, 1, "lm_head").got["logits"][0].F32() // [2, 512]
	best := 0
	for i, x := range v {
		if math.Abs(float64(x)) > math.Abs(float64(v[best])) {
			best = i
		}
	}
	row := best / 512
	token, seq, pos := []int{5, 9}[row], row, []int{5, 3}[row]
	rows := tableRows(f.Exec("top logits 1"))
	if h := strings.Join(rows[2], " "); h != "# channel value ×median token seq pos row text" {
		t.Fatalf("header %q", h)
	}
	got := rows[len(rows)-1]
	want := []string{"1", strconv.Itoa(best % 512), "", "", strconv.Itoa(token), strconv.Itoa(seq), strconv.Itoa(pos), strconv.Itoa(row)}
	for i, w := range want {
		if w != "" && got[i] != w {
			t.Fatalf("top row %v, want %v (token, seq, pos, row)", got, want)
		}
	}
	if txt := got[len(got)-1]; !strings.HasSuffix(txt, `"`) {
		t.Fatalf("top row %v: the last cell should be the channel's token text, quoted", got)
	}
}
