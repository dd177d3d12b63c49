package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// fuseExperts rewrites the DeepSeek-V3 fixture's per-expert weights of
// layers 1 and 2 as transformers 5 saves them fused: gate_up_proj
// [experts, 2·I + extra, hidden] (gate rows, then up rows, then extra zero
// rows) and down_proj [experts, hidden, I].
func fuseExperts(t *testing.T, dir string, extra int) {
	const E, I, H = 8, 36, 96 // the fixture's n_routed_experts, moe_intermediate_size, hidden_size
	hostileTensors(t, filepath.Join(dir, "model.safetensors"), func(m map[string]*tensor.Tensor, order *[]string) {
		for _, layer := range []int{1, 2} {
			p := fmt.Sprintf("model.layers.%d.mlp.experts.", layer)
			gu := tensor.New(tensor.F32, E, 2*I+extra, H)
			dn := tensor.New(tensor.F32, E, H, I)
			rb := H * 4
			for e := range E {
				base := e * (2*I + extra) * rb
				copy(gu.Data[base:], m[fmt.Sprintf("%s%d.gate_proj.weight", p, e)].Data)
				copy(gu.Data[base+I*rb:], m[fmt.Sprintf("%s%d.up_proj.weight", p, e)].Data)
				copy(dn.Data[e*H*I*4:], m[fmt.Sprintf("%s%d.down_proj.weight", p, e)].Data)
				for _, s := range []string{"gate", "up", "down"} {
					delete(m, fmt.Sprintf("%s%d.%s_proj.weight", p, e, s))
				}
			}
			m[p+"gate_up_proj"], m[p+"down_proj"] = gu, dn
			*order = append(*order, p+"gate_up_proj", p+"down_proj")
		}
	})
}

// TestFusedGateUpOddRows: a fused gate_up_proj with an odd number of rows
// per expert (2·moe_intermediate_size + 1) has no gate and up halves
// (transformers 5 splits it in two equal chunks); it loaded, gate taken as
// the first I rows and up as the I + 1 after them, and every routed expert
// computed with a row it does not have. It is now refused naming the fused
// tensor, its shape and the per-expert weight asked for. The same experts
// fused with 2·I rows still load.
func TestFusedGateUpOddRows(t *testing.T) {
	dir := hostileCopy(t, "deepseek_v3")
	fuseExperts(t, dir, 0)
	e, err := LoadDir(dir, Options{TP: 1})
	if err != nil {
		t.Fatalf("fused with 2·I rows: %v", err)
	}
	e.Close()

	dir = hostileCopy(t, "deepseek_v3")
	fuseExperts(t, dir, 1)
	e, err = LoadDir(dir, Options{TP: 1})
	if err == nil {
		e.Close()
		t.Fatal("loaded a gate_up_proj of 73 rows per expert")
	}
	for _, w := range []string{"model.layers.1.mlp.experts.gate_up_proj", "[8, 73, 96]", "even number of rows", "experts.0.gate_proj.weight"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v; want it to name %q", err, w)
		}
	}
}

// TestTwoLanguageModelPrefixes: a checkpoint holding the embedding table
// under two layouts (Kimi-K2.5's language_model.model. and a plain
// model.) is refused naming both; the plain one was taken first, silently
// when both were complete, and here with "tensor
// model.layers.0.input_layernorm.weight is missing" far from the cause.
func TestTwoLanguageModelPrefixes(t *testing.T) {
	dir := hostileCopy(t, "kimi_k25")
	const s2 = "model-00002-of-00002.safetensors"
	hostileTensors(t, filepath.Join(dir, s2), func(m map[string]*tensor.Tensor, order *[]string) {
		m["model.embed_tokens.weight"] = tensor.New(tensor.BF16, 101, 96)
		*order = append(*order, "model.embed_tokens.weight")
	})
	hostileJSON(t, filepath.Join(dir, "model.safetensors.index.json"), func(m map[string]any) {
		m["weight_map"].(map[string]any)["model.embed_tokens.weight"] = s2
	})
	e, err := LoadDir(dir, Options{TP: 1})
	if err == nil {
		e.Close()
		t.Fatal("loaded a checkpoint with two embedding tables")
	}
	if !strings.Contains(err.Error(), "model.embed_tokens.weight, language_model.model.embed_tokens.weight") {
		t.Errorf("%v; want an error naming both embedding tables", err)
	}
}
