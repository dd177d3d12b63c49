package quant

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompressedTransformConfigRefused: a compressed-tensors
// quantization_config with a transform_config (llm-compressor's
// SpinQuant/QuaRot Hadamard rotations: the weights are stored rotated and
// vLLM's CompressedTensorsConfig.from_config applies the transforms
// online) is refused naming the field; hsdb ignored it and loaded the
// rotated weights as if plain, a forward pass of another function. null
// and {} (no transform) still load, as for sparsity_config.
func TestCompressedTransformConfigRefused(t *testing.T) {
	with := func(v string) string {
		return strings.Replace(kimiQuantConfig, `"kv_cache_scheme": null`, `"kv_cache_scheme": null, "transform_config": `+v, 1)
	}
	rotated := with(`{"config_groups": {"u": {"type": "hadamard", "apply": [{"targets": ["Linear"], "location": "weight_input"}]}}}`)
	if rotated == kimiQuantConfig {
		t.Fatal("edit did not apply")
	}
	_, err := parseCompressed(json.RawMessage(rotated))
	if err == nil || !strings.Contains(err.Error(), "transform_config") {
		t.Errorf("transform_config with a Hadamard group: %v, want an error naming transform_config", err)
	}
	for _, v := range []string{`null`, `{}`} {
		if _, err := parseCompressed(json.RawMessage(with(v))); err != nil {
			t.Errorf("transform_config %s: %v, want it loaded (no transform)", v, err)
		}
	}
}
