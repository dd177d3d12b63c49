package model

import (
	"strings"
	"testing"

	"hsdb/engine/backend/cpu"
	"hsdb/engine/tensor"
)

// TestLoaderMissingNamesOtherPrefix: a tensor missing under the layout
// the loader reads (Kimi-K2.5's "language_model.", plain, transformers
// 5's "model.language_model.", "language_model.layers.") that the checkpoint holds under another is
// named with it: one shard re-exported without the wrapper read as a bare
// "missing". A tensor missing under every layout keeps the plain message.
func TestLoaderMissingNamesOtherPrefix(t *testing.T) {
	w := tensor.FromF32([]float32{1, 2}, 2)
	for _, c := range []struct{ stored, read string }{
		{"model.layers.0.input_layernorm.weight", "language_model.model.layers.0.input_layernorm.weight"},
		{"language_model.model.norm.weight", "model.norm.weight"},
		{"model.language_model.layers.3.post_attention_layernorm.weight", "language_model.model.layers.3.post_attention_layernorm.weight"},
		{"lm_head.weight", "language_model.lm_head.weight"},
		// the decoder directly under "language_model." (the loader's fourth
		// layout), read there or stored there
		{"model.layers.1.mlp.down_proj.weight", "language_model.layers.1.mlp.down_proj.weight"},
		{"language_model.layers.2.input_layernorm.weight", "model.layers.2.input_layernorm.weight"},
		{"language_model.embed_tokens.weight", "language_model.model.embed_tokens.weight"},
	} {
		src := &MapSource{Name: "m", Tensors: map[string]*tensor.Tensor{c.stored: w}}
		l := NewLoader(src, cpu.New(0), 0, 1, tensor.Invalid)
		l.At(strings.TrimSuffix(c.read, ".weight")).Full("weight", 2)
		want := "tensor " + c.read + " is missing from the checkpoint (expected shape [2]); the checkpoint holds " + c.stored + ", the same tensor under another prefix"
		if err := l.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read %s, stored %s: %v\nwant %s", c.read, c.stored, err, want)
		}
	}
	src := &MapSource{Name: "m", Tensors: map[string]*tensor.Tensor{"other.weight": w}}
	l := NewLoader(src, cpu.New(0), 0, 1, tensor.Invalid)
	l.At("model.norm").Full("weight", 2)
	if err := l.Err(); err == nil || !strings.HasSuffix(err.Error(), "tensor model.norm.weight is missing from the checkpoint (expected shape [2])") {
		t.Errorf("missing everywhere: %v", err)
	}
}
