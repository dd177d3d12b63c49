package plan_test

import (
	"os"
	"strings"
	"testing"

	"hsdb/engine/plan"
	"hsdb/engine/tensor"
)

// TestPlanScoresPerSequence: a step of more tokens than
// max_position_embeddings packs several sequences, and attention scores
// are held per sequence, so they count heads_r × L × L with L the longest
// sequence, not T × T. The llama fixture at --tp 2, f32, T = 20 (by hand,
// as TestPlanLlamaGQA): always 3·20·96·4 = 23040; attention q 48, k 12,
// v 12, rotated q 48 and k 12, attn_out 48, o_proj's sum and all-reduce
// 96 + 96: 372·20·4 = 29760 plus scores 4 heads·L·L·(4+4); MLP
// 3·20·80·4 + 2·20·96·4 = 34560.
//
//	max_position_embeddings 16: scores 4·16·16·8 = 8192, attention 37952
//	  (the peak) → 60992 (T × T would give 12800: 65600);
//	max_position_embeddings 4: scores 512, attention 30272 < the MLP
//	  → 23040 + 34560 = 57600;
//	max_position_embeddings 64 (≥ T): scores 4·20·20·8 = 12800 → 65600.
func TestPlanScoresPerSequence(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/hf/llama/config.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		maxPos string
		want   int64
	}{{"16", 60992}, {"4", 57600}, {"64", 65600}} {
		cfg := strings.Replace(string(raw), `"max_position_embeddings": 64`, `"max_position_embeddings": `+c.maxPos, 1)
		if !strings.Contains(cfg, `"max_position_embeddings": `+c.maxPos+",") {
			t.Fatalf("max_position_embeddings %s not set in the config", c.maxPos)
		}
		tr, d := tree(t, cfg, 2, false)
		p, err := plan.New(tr, d, plan.Options{World: 2, Tokens: 20, Act: plan.ActivationDType(tensor.Invalid, d)})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Ranks) != 2 {
			t.Fatalf("max_position_embeddings %s: %d ranks, want 2", c.maxPos, len(p.Ranks))
		}
		for _, r := range p.Ranks {
			if r.Activations != c.want {
				t.Errorf("max_position_embeddings %s: rank %d activations %d, want %d", c.maxPos, r.Rank, r.Activations, c.want)
			}
		}
	}
}
