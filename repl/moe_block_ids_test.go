package repl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

// TestPrintTopkIDsAtMoEBlockBound: the MoE block's site
// (layers.N.mlp, DeepseekV3MoE) shows the gate's topk_ids again, and
// `print`/`hist` there give how many ids lie outside [0, E) as they do at
// the gate (help print: "for topk_ids how many lie outside [0, E)"). The
// block shows no router logits, so E came out unknown and the column was
// left out there. E is read from the fixture's config.json here; count,
// min, max and distinct from HF transformers' router ids.
func TestPrintTopkIDsAtMoEBlockBound(t *testing.T) {
	const dir = "../testdata/hf/deepseek_v3"
	raw, err := os.ReadFile(dir + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		E int `json:"n_routed_experts"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.E <= 0 {
		t.Fatalf("config.json n_routed_experts: %v (%d)", err, cfg.E)
	}
	get, _, parts := hfReference(t, dir)
	hfIDs := get("router.1.topk_ids")
	if len(hfIDs) == 0 {
		t.Fatal("reference holds no router.1.topk_ids")
	}
	distinct := map[int]bool{}
	lo, hi := 1<<30, -1
	for _, x := range hfIDs {
		id := int(x)
		distinct[id] = true
		lo, hi = min(lo, id), max(hi, id)
	}
	for _, opts := range []engine.Options{{TP: 2}, {TP: 2, EP: true}} {
		e, err := engine.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		f := newFakeOn(t, hsdbg.New(e), &bytes.Buffer{})
		f.Exec("input " + strings.Join(parts, " ; "))
		f.Exec("break layers.1.mlp")
		f.AssertExec("run", "Stopped at model.layers.1.mlp (DeepseekV3MoE)")

		bound := fmt.Sprintf("outside [0,%d)", cfg.E)
		out := f.Exec("print topk_ids")
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^0 .*i64 .*\s%d\s+%d\s+%d\s+%d\s+0\s*$`, len(hfIDs), lo, hi, len(distinct)))
		if !strings.Contains(out, bound) || !row.MatchString(out) {
			t.Fatalf("%+v: print topk_ids at the MoE block: want count %d min %d max %d distinct %d, 0 %s:\n%s", opts, len(hfIDs), lo, hi, len(distinct), bound, out)
		}
		out = f.Exec("hist topk_ids")
		if head := fmt.Sprintf("distinct %d  %s 0", len(distinct), bound); !strings.Contains(out, head) {
			t.Fatalf("%+v: hist topk_ids at the MoE block: want %q:\n%s", opts, head, out)
		}
		f.Close()
	}
}

// TestTopTopkIDsAtMoEBlockNamesGate: `top topk_ids` is refused (ids in
// top-k slots are not values), and the refusal points to `top
// tokens_per_expert`. At the MoE block (layers.N.mlp) that tensor is not
// shown, so the hint sent the user to a tensor `print` would refuse there;
// it now names the gate's site, which `info sites` lists with
// tokens_per_expert, while the block's line lacks it.
func TestTopTopkIDsAtMoEBlockNamesGate(t *testing.T) {
	const dir = "../testdata/hf/deepseek_v3"
	e, err := engine.Open(dir, engine.Options{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOn(t, hsdbg.New(e), &bytes.Buffer{})
	defer f.Close()
	sites := f.Exec("info sites")
	gateLine := regexp.MustCompile(`(?m)^\s*\d+\s+model\.layers\.1\.mlp\.gate\s.*\btokens_per_expert\b`)
	blockLine := regexp.MustCompile(`(?m)^\s*\d+\s+model\.layers\.1\.mlp\s+DeepseekV3MoE\s.*$`)
	if !gateLine.MatchString(sites) || strings.Contains(blockLine.FindString(sites), "tokens_per_expert") || blockLine.FindString(sites) == "" {
		t.Fatalf("info sites: want the gate with tokens_per_expert and the block without:\n%s", sites)
	}
	f.Exec("input ids 0,5,17,33,2,9,41 ; ids 0,12,7")
	f.Exec("break layers.1.mlp")
	f.AssertExec("run", "Stopped at model.layers.1.mlp (DeepseekV3MoE)")
	f.AssertError("top topk_ids", "`top tokens_per_expert` at model.layers.1.mlp.gate")
	f.AssertError("print tokens_per_expert", "no such tensor")
}
