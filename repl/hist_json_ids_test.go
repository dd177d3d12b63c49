package repl

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

// histJSON runs `hist ARGS` with --json on and decodes its result keeping
// numbers as written (json.Number), so that an integer is told from a
// float.
func histJSON(t *testing.T, f *fakeTerm, args string) map[string]any {
	t.Helper()
	f.opts.json = true
	defer func() { f.opts.json = false }()
	out := strings.TrimSpace(f.Exec("hist " + args))
	d := json.NewDecoder(strings.NewReader(out))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("hist %s: not JSON: %q (%v)", args, out, err)
	}
	res, _ := m["result"].(map[string]any)
	return res
}

// asInt is n as an integer, failing on a fraction or an exponent.
func asInt(t *testing.T, what string, n any) int64 {
	t.Helper()
	num, ok := n.(json.Number)
	if !ok || strings.ContainsAny(string(num), ".eE") {
		t.Fatalf("%s: %v (%T) is not an integer", what, n, n)
	}
	v, _ := num.Int64()
	return v
}

// TestHistJSONIntegerIDs: `hist topk_ids --json` carried the float
// statistics (mean, std) and equal-width float bins ("lo": 0, "hi": 7,
// bins 0.35 wide) beside the exact per-id counts. Its JSON is now
// integers only: ids (count per id, min, max, distinct, outside [0, E))
// and bars [lo, hi] of whole ids with their counts, here one per id (at
// most 64 distinct); all derived from HF transformers' router ids
// (reference.safetensors, router.1.topk_ids). A float tensor (the gate's
// input) keeps its stats and float bins.
func TestHistJSONIntegerIDs(t *testing.T) {
	const dir = "../testdata/hf/deepseek_v3"
	get, _, parts := hfReference(t, dir)
	count := map[int64]int64{}
	for _, x := range get("router.1.topk_ids") {
		count[int64(x)]++
	}
	f := stopAtGate(t, dir, engine.Options{TP: 2, EP: true}, parts)

	res := histJSON(t, f, "topk_ids")
	for _, k := range []string{"stats", "hist"} {
		if _, ok := res[k]; ok {
			t.Errorf("hist topk_ids --json still carries %q: %v", k, res[k])
		}
	}
	if r, _ := res["ranged"].(bool); r {
		t.Errorf("ranged with %d distinct ids", len(count))
	}
	bars, _ := res["bars"].([]any)
	if len(bars) != len(count) {
		t.Fatalf("%d bars, want one per distinct id (%d): %v", len(bars), len(count), res["bars"])
	}
	prev := int64(-1)
	for i, b := range bars {
		m := b.(map[string]any)
		lo, hi, n := asInt(t, "lo", m["lo"]), asInt(t, "hi", m["hi"]), asInt(t, "count", m["count"])
		if lo != hi || lo <= prev || n != count[lo] {
			t.Errorf("bar %d: [%d, %d] %d; want one id, ascending, chosen %d times by HF", i, lo, hi, n, count[lo])
		}
		prev = lo
	}
	ids := res["ids"].(map[string]any)
	if got := asInt(t, "distinct", ids["distinct"]); got != int64(len(count)) {
		t.Errorf("distinct %d, want %d", got, len(count))
	}
	if got := asInt(t, "out_of_range", ids["out_of_range"]); got != 0 {
		t.Errorf("out_of_range %d, want 0 (HF's ids are all in [0, 8))", got)
	}
	for _, c := range ids["counts"].([]any) {
		m := c.(map[string]any)
		if id, n := asInt(t, "id", m["id"]), asInt(t, "count", m["count"]); n != count[id] {
			t.Errorf("ids.counts: id %d %d times, HF %d", id, n, count[id])
		}
	}

	res = histJSON(t, f, "input")
	if _, ok := res["stats"].(map[string]any)["mean"]; !ok {
		t.Errorf("hist input --json lost its stats: %v", res)
	}
	if h, ok := res["hist"].(map[string]any); !ok || h["counts"] == nil || res["bars"] != nil {
		t.Errorf("hist input --json: want float bins and no id bars: %v", res)
	}
}

// TestHistJSONIDRanges: past 64 distinct ids the JSON bars are the text's
// ranges of whole ids. The ids of TestHistIDRanges (expert i chosen i%3+1
// times of 256, plus -1 and 300): by hand, [0, 5] and [246, 251] 12 each,
// [252, 255] 7, [-1, -1] and [298, 300] 1 each and outside [0, 256).
func TestHistJSONIDRanges(t *testing.T) {
	v := rangedIDs()
	ids := stats.IDsOf(v, 256)
	view := idHistJSON(&client.HistReport{Tensor: "topk_ids", Shape: []int{len(v)}, Stats: stats.Of(v), Hist: stats.Histogram(v, 20), IDs: &ids})
	b, err := json.Marshal(jsonValue(reflect.ValueOf(view)))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !view.Ranged || strings.Contains(s, `"mean"`) || strings.Contains(s, `"hist"`) {
		t.Fatalf("want ranged bars and no float stats or bins: %s", s)
	}
	for _, want := range []string{`{"lo":-1,"hi":-1,"count":1,"outside":true}`, `{"lo":0,"hi":5,"count":12}`, `{"lo":246,"hi":251,"count":12}`, `{"lo":252,"hi":255,"count":7}`, `{"lo":298,"hi":300,"count":1,"outside":true}`} {
		if !strings.Contains(s, want) {
			t.Errorf("want %s in %s", want, s)
		}
	}
	var sum int64
	for _, r := range view.Bars {
		sum += r.Count
	}
	if sum != int64(len(v)) {
		t.Errorf("bars count %d elements, want %d", sum, len(v))
	}
}
