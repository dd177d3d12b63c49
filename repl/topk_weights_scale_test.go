package repl

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"hsdb/engine"
)

// TestTopkWeightsRoutedScaling: `print topk_weights[...]` at a MoE gate
// shows the weights `help print` describes, derived here by hand from HF
// transformers' router logits and chosen ids (reference.safetensors,
// router.1.logits and router.1.topk_ids) and the fixture's config.json
// (scoring_func sigmoid, norm_topk_prob true, routed_scaling_factor 2.5):
// w[t, j] = sigmoid(logit[t, id_j]) / Σ_j' sigmoid(logit[t, id_j']) ×
// routed_scaling_factor, so each token's weights sum to 2.5, not 1.
func TestTopkWeightsRoutedScaling(t *testing.T) {
	const dir = "../testdata/hf/deepseek_v3"
	var cfg struct {
		Scale float64 `json:"routed_scaling_factor"`
		Norm  bool    `json:"norm_topk_prob"`
		Score string  `json:"scoring_func"`
		E     int     `json:"n_routed_experts"`
		K     int     `json:"num_experts_per_tok"`
	}
	b, err := os.ReadFile(dir + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Scale != 2.5 || !cfg.Norm || cfg.Score != "sigmoid" {
		t.Fatalf("the fixture's router is not what this test derives: %+v", cfg)
	}
	get, _, parts := hfReference(t, dir)
	logits, hfIDs := get("router.1.logits"), get("router.1.topk_ids")
	T := len(hfIDs) / cfg.K
	sig := func(tok, id int) float64 { return 1 / (1 + math.Exp(-float64(logits[tok*cfg.E+id]))) }

	f := stopAtGate(t, dir, engine.Options{TP: 1}, parts)
	values := func(name string) []any {
		res := f.jsonExec("print " + name + "[:, :]")[0]["result"].(map[string]any)
		return res["ranks"].([]any)[0].(map[string]any)["values"].([]any)
	}
	wRows, idRows := values("topk_weights"), values("topk_ids")
	if len(wRows) != T || len(idRows) != T {
		t.Fatalf("%d rows of topk_weights, %d of topk_ids; HF routed %d tokens", len(wRows), len(idRows), T)
	}
	for tok := range T {
		ids, ws := idRows[tok].([]any), wRows[tok].([]any)
		// the same experts as HF's (in any order: HF's topk is sorted=False)
		var denom float64
		hf := map[int]bool{}
		for j := range cfg.K {
			hf[int(hfIDs[tok*cfg.K+j])] = true
			denom += sig(tok, int(hfIDs[tok*cfg.K+j]))
		}
		var sum float64
		for j := range cfg.K {
			id, got := int(ids[j].(float64)), ws[j].(float64)
			if !hf[id] {
				t.Fatalf("token %d: expert %d, HF chose %v", tok, id, hfIDs[tok*cfg.K:(tok+1)*cfg.K])
			}
			want := sig(tok, id) / denom * cfg.Scale
			if d := math.Abs(got - want); !(d <= 1e-5) {
				t.Errorf("token %d expert %d: weight %v, by hand %v", tok, id, got, want)
			}
			sum += got
		}
		if d := math.Abs(sum - cfg.Scale); !(d <= 1e-5) {
			t.Errorf("token %d: weights sum to %v, want routed_scaling_factor %v", tok, sum, cfg.Scale)
		}
	}
}
