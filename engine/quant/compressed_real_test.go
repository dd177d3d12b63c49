package quant

import (
	"encoding/json"
	"testing"
)

// TestCompressedRealDump: a quantization_config as llm-compressor writes it
// through compressed-tensors' QuantizationConfig.model_dump (the
// Kimi-K2-Thinking group with every field QuantizationArgs has: observer,
// observer_kwargs {}, block_structure, and the scale_dtype / zp_dtype of
// recent releases, all null; the group's own "format"; top-level version,
// global_compression_ratio null, sparsity_config {} and transform_config
// null) reads as int4 symmetric with groups of 32: fields hsdb does not use
// are not refused.
func TestCompressedRealDump(t *testing.T) {
	const cfg = `{
  "config_groups": {
    "group_0": {
      "format": "pack-quantized",
      "input_activations": null,
      "output_activations": null,
      "targets": ["Linear"],
      "weights": {
        "actorder": null,
        "block_structure": null,
        "dynamic": false,
        "group_size": 32,
        "num_bits": 4,
        "observer": "minmax",
        "observer_kwargs": {},
        "scale_dtype": null,
        "strategy": "group",
        "symmetric": true,
        "type": "int",
        "zp_dtype": null
      }
    }
  },
  "format": "pack-quantized",
  "global_compression_ratio": null,
  "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
  "kv_cache_scheme": null,
  "quant_method": "compressed-tensors",
  "quantization_status": "compressed",
  "sparsity_config": {},
  "transform_config": null,
  "version": "0.12.2"
}`
	c, err := parseCompressed(json.RawMessage(cfg))
	if err != nil {
		t.Fatal(err)
	}
	thirtyTwo := 32
	want := compressedWeights{NumBits: 4, Type: "int", Symmetric: true, Strategy: "group", GroupSize: &thirtyTwo}
	if len(c.groups) != 1 || !sameWeights(c.groups[0].w, want) {
		t.Fatalf("read as %+v, want %+v", c.groups, want)
	}
}
