package main

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/plan"
)

// planJSONKeys are the keys of `hsdb plan --json`, as README.md lists them
// under "Will it fit?": the plan's (engine.DirPlan with every optional
// field set), a rank's, the --pp wrapper's and a failure's. Scripts read
// these names: renaming or dropping one is a change of the format, to be
// made here and in README.md together.
var planJSONKeys = map[string][]string{
	"plan": {"activation_dtype", "architecture", "checkpoint", "dense_dtype", "device_bytes", "expert_parallel", "fits", "kv_convention",
		"llama2c", "max_tokens", "not_counted", "notes", "quantization", "ranks", "seq_len", "seqs", "shared", "skipped", "w8a8", "world_size"},
	"rank":    {"activation_bytes", "kv_bytes", "quantized_weights_bytes", "rank", "total_bytes", "weights_bytes"},
	"stages":  {"fits", "pipeline_stages", "stages"},
	"stage":   {"layers", "plan", "stage"},
	"failure": {"command", "error", "exit"},
}

// keysOf returns the sorted keys of the JSON object b.
func keysOf(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestPlanJSONKeys: the keys `hsdb plan --json` can print are exactly
// planJSONKeys, and README.md's plan section names each of them. The
// optional ones (shared, quantization, kv_convention, skipped,
// not_counted, notes, llama2c) are set on a plan made by hand so that
// every key appears; DeepSeek-V3's real plan at --tp 2 on the CPU and at
// --pp 2 shows no key outside the list; a failure is one object of its
// three keys.
func TestPlanJSONKeys(t *testing.T) {
	full := &engine.DirPlan{Plan: &plan.Plan{Ranks: []plan.Rank{{}}, Shared: true, Quant: "q", KVConvention: "kv"},
		Skipped: "s", NotCounted: []string{"n"}, Notes: []string{"n"}, Llama2C: true}
	b, err := json.Marshal(stagePlan{Plan: full})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, b); !slices.Equal(got, planJSONKeys["stage"]) {
		t.Errorf("a stage's keys %v, want %v", got, planJSONKeys["stage"])
	}
	b, err = json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, b); !slices.Equal(got, planJSONKeys["plan"]) {
		t.Errorf("the plan's keys %v, want %v", got, planJSONKeys["plan"])
	}
	rank, err := json.Marshal(full.Ranks[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, rank); !slices.Equal(got, planJSONKeys["rank"]) {
		t.Errorf("a rank's keys %v, want %v", got, planJSONKeys["rank"])
	}

	dir := "../../testdata/configs/deepseek-v3"
	out, errs, code := runHsdb(t, "plan", "--model", dir, "--tp", "2", "--device", "cpu", "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (does not fit): %s", code, errs)
	}
	for _, k := range keysOf(t, []byte(out)) {
		if !slices.Contains(planJSONKeys["plan"], k) {
			t.Errorf("plan --json printed key %q, not in the documented list", k)
		}
	}
	out, errs, code = runHsdb(t, "plan", "--model", dir, "--tp", "8", "--pp", "2", "--json")
	if code != 0 {
		t.Fatalf("--pp 2: exit %d: %s", code, errs)
	}
	if got := keysOf(t, []byte(out)); !slices.Equal(got, planJSONKeys["stages"]) {
		t.Errorf("--pp keys %v, want %v", got, planJSONKeys["stages"])
	}
	out, _, code = runHsdb(t, "plan", "--model", dir, "--tp", "3", "--json")
	if code != 2 {
		t.Fatalf("--tp 3: exit %d, want 2", code)
	}
	if got := keysOf(t, []byte(out)); !slices.Equal(got, planJSONKeys["failure"]) {
		t.Errorf("failure keys %v, want %v", got, planJSONKeys["failure"])
	}

	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(readme), "## Will it fit? `hsdb plan`")
	if start < 0 {
		t.Fatal("README.md has no plan section")
	}
	section := string(readme[start:])
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	for _, ks := range planJSONKeys {
		for _, k := range ks {
			if !strings.Contains(section, "`"+k+"`") && !strings.Contains(section, `"`+k+`"`) {
				t.Errorf("README.md's plan section does not name the --json key %q", k)
			}
		}
	}
}
