package quant

import (
	"encoding/json"
	"strings"
	"testing"
)

// compressedWith returns kimiQuantConfig with its group's weights object
// replaced by w.
func compressedWith(t *testing.T, w string) string {
	t.Helper()
	const old = `"weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32,
      "dynamic": false, "actorder": null, "observer": "minmax", "block_structure": null}`
	s := strings.Replace(kimiQuantConfig, old, `"weights": `+w, 1)
	if s == kimiQuantConfig {
		t.Fatal("edit did not apply")
	}
	return s
}

// TestCompressedWeightsDefaults: a group's weights are read as
// compressed-tensors' QuantizationArgs reads them (quant_args.py): an
// absent symmetric is true, an absent strategy is inferred from
// group_size > 0 as "group", type and strategy are lowercased, actorder
// false is None. hsdb read an absent symmetric as false, so a W4A16
// checkpoint whose config left it out failed to load with "symmetric is
// false but the checkpoint has no zero points"; strategy null, "INT" and
// actorder false were refused as unsupported values. Each variant below
// is the Kimi-K2-Thinking group (int4 symmetric, group 32) written
// another way.
func TestCompressedWeightsDefaults(t *testing.T) {
	thirtyTwo := 32
	want := compressedWeights{NumBits: 4, Type: "int", Symmetric: true, Strategy: "group", GroupSize: &thirtyTwo}
	for name, w := range map[string]string{
		"symmetric absent":     `{"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}`,
		"symmetric null":       `{"num_bits": 4, "type": "int", "symmetric": null, "strategy": "group", "group_size": 32}`,
		"strategy absent":      `{"num_bits": 4, "type": "int", "symmetric": true, "group_size": 32}`,
		"strategy null":        `{"num_bits": 4, "type": "int", "symmetric": true, "strategy": null, "group_size": 32}`,
		"type absent":          `{"num_bits": 4, "symmetric": true, "strategy": "group", "group_size": 32}`,
		"upper case":           `{"num_bits": 4, "type": "INT", "symmetric": true, "strategy": "GROUP", "group_size": 32}`,
		"actorder false":       `{"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32, "actorder": false}`,
		"dynamic null":         `{"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32, "dynamic": null}`,
		"only bits and groups": `{"num_bits": 4, "group_size": 32}`,
	} {
		c, err := parseCompressed(json.RawMessage(compressedWith(t, w)))
		if err != nil {
			t.Errorf("%s: %v, want it read as int4 symmetric, group 32", name, err)
			continue
		}
		if len(c.groups) != 1 || !sameWeights(c.groups[0].w, want) {
			t.Errorf("%s: read as %+v, want %+v", name, c.groups[0].w, want)
		}
	}
	// What the defaults make of a group is still checked: num_bits absent
	// is 8, a group_size without strategy -1 is per-channel, none is
	// per-tensor, actorder true is "group", dynamic "local" is dynamic.
	for name, tc := range map[string]struct{ w, msg string }{
		"num_bits absent":   {`{"type": "int", "symmetric": true, "strategy": "group", "group_size": 32}`, "config_groups.group_0.weights.num_bits 8 is not supported"},
		"group_size -1":     {`{"num_bits": 4, "group_size": -1}`, `config_groups.group_0.weights.strategy "channel" is not supported`},
		"no group_size":     {`{"num_bits": 4}`, `config_groups.group_0.weights.strategy "tensor" is not supported`},
		"actorder true":     {`{"num_bits": 4, "group_size": 32, "actorder": true}`, `config_groups.group_0.weights.actorder "group" is not supported`},
		"actorder number":   {`{"num_bits": 4, "group_size": 32, "actorder": 3}`, `config_groups.group_0.weights.actorder 3: want null, false`},
		"dynamic local":     {`{"num_bits": 4, "group_size": 32, "dynamic": "local"}`, `config_groups.group_0.weights.dynamic "local" is not supported`},
		"dynamic true":      {`{"num_bits": 4, "group_size": 32, "dynamic": true}`, `config_groups.group_0.weights.dynamic true is not supported`},
		"weights a list":    {`[4, 32]`, "config_groups.group_0.weights is a JSON array, want an object"},
		"weights null":      {`null`, "config_groups.group_0.weights is missing"},
		"group_size string": {`{"num_bits": 4, "group_size": "32"}`, "config_groups.group_0.weights: group_size: got a JSON string"},
	} {
		_, err := parseCompressed(json.RawMessage(compressedWith(t, tc.w)))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.msg)
		}
	}
}
