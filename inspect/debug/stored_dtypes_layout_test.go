package debug

import (
	"os"
	"path/filepath"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestStoredDTypesLayouts: `info model`'s stored dtypes look a parameter
// up under every layout the loader takes (model.LMLayouts); it tried the
// plain name and "language_model." before it only, so a checkpoint whose
// decoder is stored as "language_model.layers.0..." (or transformers 5's
// "model.language_model.layers.0...") counted none of its decoder's
// tensors. Three tensors written under each layout, counted by hand: the
// embeddings and a norm bf16, the head f32.
func TestStoredDTypesLayouts(t *testing.T) {
	cfg, err := os.ReadFile("../../testdata/hf/deepseek_v3/config.json")
	if err != nil {
		t.Fatal(err)
	}
	params := []model.Param{{Name: "model.embed_tokens.weight"}, {Name: "model.layers.0.input_layernorm.weight"}, {Name: "lm_head.weight"}}
	for _, c := range []struct{ prefix, head string }{
		{"model.", "lm_head.weight"},
		{"language_model.model.", "language_model.lm_head.weight"},
		{"model.language_model.", "lm_head.weight"},
		{"language_model.", "lm_head.weight"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		ts := []safetensors.Named{
			{Name: c.prefix + "embed_tokens.weight", T: tensor.New(tensor.BF16, 4, 2)},
			{Name: c.prefix + "layers.0.input_layernorm.weight", T: tensor.New(tensor.BF16, 2)},
			{Name: c.head, T: tensor.New(tensor.F32, 4, 2)},
		}
		if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
			t.Fatal(err)
		}
		got, packed, err := storedDTypes(dir, params)
		if err != nil || packed != 0 || len(got) != 2 || got[tensor.BF16] != 2 || got[tensor.F32] != 1 {
			t.Errorf("decoder under %q: %v (packed %d, %v), want 2 bf16 and 1 f32", c.prefix, got, packed, err)
		}
	}
}
