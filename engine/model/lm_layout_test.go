package model

import (
	"slices"
	"testing"
)

// TestCheckpointNames: a plain-layout name maps to one name per layout
// the loader takes, by hand: the decoder's under model., language_model.model.,
// model.language_model. and language_model.; the LM head under
// lm_head.weight and language_model.lm_head.weight (the other layouts
// share the plain one's); a name outside both only to itself.
func TestCheckpointNames(t *testing.T) {
	for _, c := range []struct {
		name string
		want []string
	}{
		{"model.layers.1.mlp.experts.3.down_proj.weight", []string{
			"model.layers.1.mlp.experts.3.down_proj.weight",
			"language_model.model.layers.1.mlp.experts.3.down_proj.weight",
			"model.language_model.layers.1.mlp.experts.3.down_proj.weight",
			"language_model.layers.1.mlp.experts.3.down_proj.weight"}},
		{"model.embed_tokens.weight", []string{"model.embed_tokens.weight", "language_model.model.embed_tokens.weight",
			"model.language_model.embed_tokens.weight", "language_model.embed_tokens.weight"}},
		{"lm_head.weight", []string{"lm_head.weight", "language_model.lm_head.weight"}},
		{"vision_tower.patch_embed.weight", []string{"vision_tower.patch_embed.weight"}},
	} {
		if got := CheckpointNames(c.name); !slices.Equal(got, c.want) {
			t.Errorf("CheckpointNames(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if n := len(LMLayouts()); n != 4 {
		t.Errorf("%d layouts, want 4", n)
	}
}
