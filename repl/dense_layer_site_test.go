package repl

import (
	"strings"
	"testing"

	"hsdb/engine"
)

// TestDenseLayerSiteHint: `break layers.0.mlp.gate` (or `capture site
// layers.0.mlp.gate topk_ids`) on DeepSeek-V3 said only that the pattern
// "matches no site of this model (layers 0-3 ...)", though layer 0 is
// there: it is dense (first_k_dense_replace 1), so its mlp has no router.
// By hand from the fixture's config.json (num_hidden_layers 4,
// first_k_dense_replace 1): layers 1-3 have mlp.gate, layer 0's mlp is
// vLLM's DeepseekV2MLP. A layer the model lacks gets no such hint.
func TestDenseLayerSiteHint(t *testing.T) {
	f := openFake(t, "../testdata/hf/deepseek_v3", engine.Options{TP: 1})
	f.AssertError("break layers.0.mlp.gate", "layer 0 has no mlp.gate, layers 1-3 have one (layer 0's mlp is a dense DeepseekV2MLP, no MoE)")
	f.AssertError("capture site model.layers.0.mlp.experts output", "layer 0 has no mlp.experts, layers 1-3 have one")
	if err := f.Term.Exec("break layers.9.mlp.gate"); err == nil || strings.Contains(err.Error(), "has no mlp.gate") {
		t.Errorf("layer 9 (not in the model): %v", err)
	}
}
