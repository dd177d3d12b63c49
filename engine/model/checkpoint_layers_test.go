package model

import "testing"

// TestCheckpointLayers: distinct layer indices anywhere in a name, the
// highest of them; none gives (0, -1). Counted by hand.
func TestCheckpointLayers(t *testing.T) {
	for _, c := range []struct {
		names       []string
		count, high int
	}{
		{[]string{"model.layers.0.mlp.up_proj.weight", "model.layers.2.input_layernorm.weight", "language_model.model.layers.10.self_attn.o_proj.weight", "lm_head.weight", "model.layers.2.mlp.down_proj.weight"}, 3, 10},
		{[]string{"layers.7.attention.wq.weight"}, 1, 7},
		{[]string{"model.embed_tokens.weight", "model.norm.weight", "model.layersX.1.w", "model.layers.-1.w"}, 0, -1},
		{nil, 0, -1},
	} {
		n, hi := CheckpointLayers(c.names)
		if n != c.count || hi != c.high {
			t.Errorf("CheckpointLayers(%q) = %d, %d; want %d, %d", c.names, n, hi, c.count, c.high)
		}
	}
}
