package repl

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"hsdb/engine"
)

// TestPrintHistIntegerIDs: print and hist of a router's topk_ids (I64)
// show the ids' count, min, max, number of distinct ids and how many lie
// outside [0, E) for the fixture's E = 8 routed experts (config.json's
// n_routed_experts), and hist a bar per id with its count, all derived
// from HF transformers' router ids (reference.safetensors), not mean, std
// or l2. A float tensor (the gate's input) still shows mean and std.
func TestPrintHistIntegerIDs(t *testing.T) {
	const dir = "../testdata/hf/deepseek_v3"
	get, _, parts := hfReference(t, dir)
	hfIDs := get("router.1.topk_ids")
	count := map[int]int{}
	lo, hi := 1<<30, -1
	for _, x := range hfIDs {
		id := int(x)
		count[id]++
		lo, hi = min(lo, id), max(hi, id)
	}
	f := stopAtGate(t, dir, engine.Options{TP: 2, EP: true}, parts)

	out := f.Exec("print topk_ids")
	for _, bad := range []string{"mean", "std", "l2"} {
		if strings.Contains(out, bad) {
			t.Fatalf("print of integer topk_ids shows %s:\n%s", bad, out)
		}
	}
	// Rank rows: rank shape i64 replicated count min max distinct outside.
	row := regexp.MustCompile(fmt.Sprintf(`(?m)^0 .*i64 .*\s%d\s+%d\s+%d\s+%d\s+0\s*$`, len(hfIDs), lo, hi, len(count)))
	if !strings.Contains(out, "outside [0,8)") || !row.MatchString(out) {
		t.Fatalf("print topk_ids: want count %d min %d max %d distinct %d, 0 outside [0,8):\n%s", len(hfIDs), lo, hi, len(count), out)
	}

	out = f.Exec("hist topk_ids")
	head := fmt.Sprintf("min %d  max %d  distinct %d  outside [0,8) 0", lo, hi, len(count))
	if !strings.Contains(out, head) || strings.Contains(out, "mean") {
		t.Fatalf("hist topk_ids: want %q and no mean:\n%s", head, out)
	}
	for id, n := range count {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^\s*%d\s+█+\s+%d\s*$`, id, n)).MatchString(out) {
			t.Fatalf("hist topk_ids: expert %d chosen %d times by HF; got\n%s", id, n, out)
		}
	}
	if got := strings.Count(out, "█\n") + strings.Count(out, "█ "); got < len(count) {
		t.Fatalf("hist topk_ids: %d bars, want one per distinct id (%d):\n%s", got, len(count), out)
	}

	if out := f.Exec("print input"); !strings.Contains(out, "mean") || !strings.Contains(out, "std") {
		t.Fatalf("print of a float tensor lost mean/std:\n%s", out)
	}
}
