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

// TestFP8ActivationSchemeChecked: a block-fp8 quantization_config whose
// activation_scheme is not "dynamic" ("static", which needs stored
// activation scales, or a typo) is refused naming the field, as vLLM's
// Fp8Config refuses it ("The block-wise quantization only supports dynamic
// activation scheme"); hsdb read the field and never looked at it, so a
// static-activation checkpoint loaded with its input scales unused.
// "dynamic", absent and null (HF FineGrainedFP8Config's default) load.
func TestFP8ActivationSchemeChecked(t *testing.T) {
	cfg := func(scheme string) json.RawMessage {
		return json.RawMessage(`{"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]` + scheme + `}`)
	}
	for _, bad := range []string{`"static"`, `"zzz"`, `""`} {
		_, err := parseFP8(cfg(`, "activation_scheme": ` + bad))
		if err == nil || !strings.Contains(err.Error(), "activation_scheme "+bad) {
			t.Errorf("activation_scheme %s: %v, want an error naming activation_scheme %s", bad, err, bad)
		}
	}
	for _, ok := range []string{`, "activation_scheme": "dynamic"`, `, "activation_scheme": null`, ``} {
		if _, err := parseFP8(cfg(ok)); err != nil {
			t.Errorf("%q: %v, want it loaded", ok, err)
		}
	}
}
