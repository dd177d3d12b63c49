package engine

import (
	"path/filepath"
	"testing"

	"hsdb/engine/tensor"
)

// TestPlanChecksDenseHeaders: `hsdb plan` with the weights present counted
// every dense weight at the shape config.json implies and said the
// checkpoint fits, while the load refused a weight whose header holds
// another shape or an integer dtype, naming the tensor. The plan now makes
// those checks from the headers and fails with the load's words. By hand,
// from testdata/hf/qwen3 (hidden 96, 8 heads of head_dim 16, 2 kv heads,
// intermediate 160, vocab 101): q_proj is [8·16, 96] = [128, 96], k_proj
// [2·16, 96] = [32, 96]; without head_dim in config.json it takes
// Qwen3Config's default, 128 (not hidden / heads), so q_proj should be
// [8·128, 96] = [1024, 96]: the error names the default, since the
// mismatched dimension is the default times 8 heads and the stored 128 is
// a multiple of 8 as well (8 × 16). The fp8 fixture's dense
// weights (norms, embeddings, the router) are checked alike, its fp8
// linears by the scheme as before.
func TestPlanChecksDenseHeaders(t *testing.T) {
	const q = "model.layers.0.self_attn.q_proj.weight"
	for _, c := range []struct {
		name, fixture string
		edit          func(m map[string]*tensor.Tensor, order *[]string)
		config        func(m map[string]any)
		want          string
	}{
		{"transposed", "qwen3", func(m map[string]*tensor.Tensor, _ *[]string) {
			m[q] = tensor.New(tensor.F32, 96, 128)
		}, nil, "tensor " + q + " has shape [96, 128] in the checkpoint, the config implies [128, 96]"},
		{"flattened", "qwen3", func(m map[string]*tensor.Tensor, _ *[]string) {
			m[q] = tensor.New(tensor.F32, 128*96)
		}, nil, "tensor " + q + " has shape [12288] in the checkpoint, the config implies [128, 96]"},
		{"integer dtype", "qwen3", func(m map[string]*tensor.Tensor, _ *[]string) {
			m[q] = tensor.New(tensor.U8, 128, 96)
		}, nil, "tensor " + q + " has dtype u8, a float dtype was expected"},
		{"config without head_dim", "qwen3", nil, func(m map[string]any) {
			delete(m, "head_dim")
		}, "head_dim 128 (Qwen3Config's default: config.json has none) but tensor " + q + " is [128, 96] in the checkpoint (the config implies [1024, 96])"},
		{"fp8 checkpoint: a norm of the wrong width", "deepseek_v3_fp8", func(m map[string]*tensor.Tensor, _ *[]string) {
			m["model.layers.1.post_attention_layernorm.weight"] = tensor.New(tensor.F32, 95)
		}, nil, "tensor model.layers.1.post_attention_layernorm.weight has shape [95] in the checkpoint, the config implies [96]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := hostileCopy(t, c.fixture)
			if c.edit != nil {
				hostileTensors(t, filepath.Join(dir, "model.safetensors"), c.edit)
			}
			if c.config != nil {
				hostileJSON(t, filepath.Join(dir, "config.json"), c.config)
			}
			planAndLoadRefuse(t, dir, c.want)
		})
	}
	// The fixtures as they are still plan.
	for _, f := range []string{"qwen3", "llama", "llama3", "mistral", "qwen2", "deepseek_v2", "deepseek_v3", "deepseek_v3_fp8", "kimi_k2_thinking", "kimi_k25"} {
		if _, err := PlanDir(filepath.Join("..", "testdata", "hf", f), PlanOptions{TP: 1}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
