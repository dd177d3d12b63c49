package quant

import (
	"strings"
	"testing"
)

// TestHugeBlockSizes: a weight_block_size or group_size beyond
// int32 (what the device kernels take) is refused at parse, naming the
// field; before, 2^63-1 passed and a scale of zero rows crashed the load.
func TestHugeBlockSizes(t *testing.T) {
	for _, c := range []struct{ raw, field string }{
		{`{"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [9223372036854775807, 32]}`, "weight_block_size"},
		{`{"quant_method": "fp8", "weight_block_size": [128, 2147483648]}`, "weight_block_size"},
		{`{"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {"targets": ["Linear"],
			"weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 4611686018427387904}}}}`, "group_size"},
	} {
		s, err := Parse([]byte(c.raw))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: Parse = %v, %v; want an error naming %s", c.raw, s, err, c.field)
		}
	}
	// The bound itself is accepted (one block covers any real weight).
	if _, err := Parse([]byte(`{"quant_method": "fp8", "weight_block_size": [2147483647, 128]}`)); err != nil {
		t.Fatal(err)
	}
}

// TestQuantConfigNotObject: a quantization_config that is not a
// JSON object is one error naming the field and what was expected, not
// Go's decoder type names.
func TestQuantConfigNotObject(t *testing.T) {
	for _, raw := range []string{`5`, `"fp8"`, `[1, 2]`, `true`} {
		_, err := Parse([]byte(raw))
		if err == nil || !strings.Contains(err.Error(), "quantization_config") || !strings.Contains(err.Error(), "want a JSON object") || strings.Contains(err.Error(), "Go ") {
			t.Errorf("quantization_config %s: %v; want one error naming the field and a JSON object", raw, err)
		}
	}
}

// TestWrapperQuantConflict: a wrapper whose top-level
// quantization_config (fp8) differs from text_config's (int4) loaded with
// the top-level one and failed on a "missing" weight far from the cause;
// it is now one error naming both fields. The same config in both places
// (or only one) is accepted.
func TestWrapperQuantConflict(t *testing.T) {
	const int4 = `{"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {"targets": ["Linear"],
		"weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32}}}}`
	const fp8 = `{"quant_method": "fp8", "weight_block_size": [128, 128]}`
	_, err := FromConfig([]byte(`{"quantization_config": ` + fp8 + `, "text_config": {"quantization_config": ` + int4 + `}}`))
	if err == nil || !strings.Contains(err.Error(), "quantization_config and text_config.quantization_config differ") {
		t.Fatalf("conflicting configs: %v", err)
	}
	for _, cfg := range []string{
		`{"quantization_config": ` + int4 + `, "text_config": {"quantization_config": ` + int4 + `}}`,
		`{"text_config": {"quantization_config": ` + int4 + `}}`,
		`{"quantization_config": ` + int4 + `, "text_config": {"quantization_config": null}}`,
	} {
		s, err := FromConfig([]byte(cfg))
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		if _, ok := s.(*Compressed); !ok {
			t.Fatalf("%s: scheme %T, want the int4 scheme", cfg, s)
		}
	}
}
