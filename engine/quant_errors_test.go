package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// TestPackedWithoutQuantConfig: a Kimi checkpoint whose config.json lost
// its quantization_config (a hand-edited or regenerated config; under the
// wrapper, text_config's) holds its routed experts as weight_packed, which
// nothing can read without the scheme. The load said "tensor
// ...experts.0.gate_proj.weight is missing from the checkpoint"; it now
// names the packed tensor and the missing quantization_config.
func TestPackedWithoutQuantConfig(t *testing.T) {
	for _, c := range []struct {
		fixture string
		edit    func(m map[string]any)
	}{
		{"kimi_k2_thinking", func(m map[string]any) { delete(m, "quantization_config") }},
		{"kimi_k25", func(m map[string]any) { delete(m["text_config"].(map[string]any), "quantization_config") }},
	} {
		dir := hostileCopy(t, c.fixture)
		hostileJSON(t, filepath.Join(dir, "config.json"), c.edit)
		e, err := LoadDir(dir, Options{TP: 1})
		if err == nil {
			e.Close()
			t.Fatalf("%s: loaded without quantization_config", c.fixture)
		}
		for _, w := range []string{"experts.0.gate_proj.weight_packed", "compressed-tensors", "no quantization_config"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to name %q", c.fixture, err, w)
			}
		}
		if strings.Contains(err.Error(), "missing from the checkpoint") {
			t.Errorf("%s: %v; the weight is not missing, it is packed", c.fixture, err)
		}
	}
}

// TestModuleDenseAndPacked: a Kimi checkpoint holding an expert's weight
// both packed (weight_packed, the released form) and dense (a stray
// M.weight, as a half-finished conversion leaves) is refused naming both;
// it loaded the packed one and never said the dense one was there.
func TestModuleDenseAndPacked(t *testing.T) {
	dir := hostileCopy(t, "kimi_k2_thinking")
	const mod = "model.layers.1.mlp.experts.3.down_proj"
	hostileTensors(t, filepath.Join(dir, "model.safetensors"), func(m map[string]*tensor.Tensor, order *[]string) {
		shape := m[mod+".weight_shape"]
		out, in := int(shape.Int(0)), int(shape.Int(1))
		m[mod+".weight"] = tensor.New(tensor.BF16, out, in)
		*order = append(*order, mod+".weight")
	})
	e, err := LoadDir(dir, Options{TP: 1})
	if err == nil {
		e.Close()
		t.Fatal("loaded a module stored twice")
	}
	if !strings.Contains(err.Error(), "both dense ("+mod+".weight) and packed ("+mod+".weight_packed)") {
		t.Errorf("%v; want an error naming both tensors", err)
	}
}
