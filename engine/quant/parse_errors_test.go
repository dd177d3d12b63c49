package quant

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestQuantMethodWrongType: a quant_method (or text_config) of the wrong
// JSON type is named in JSON's terms; before, the message was Go's
// ("json: cannot unmarshal number into Go struct field .quant_method of
// type string").
func TestQuantMethodWrongType(t *testing.T) {
	for _, c := range []struct {
		cfg, want string
	}{
		{`{"quantization_config": {"quant_method": 5}}`, "quant_method: got a JSON number, want a string"},
		{`{"quantization_config": {"quant_method": ["fp8"]}}`, "quant_method: got a JSON array, want a string"},
		{`{"text_config": [1]}`, "text_config: got a JSON array"},
	} {
		_, err := FromConfig([]byte(c.cfg))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %v; want an error containing %q and no Go type names", c.cfg, err, c.want)
		}
	}
}

// TestCompressedPatternBounds: more than 128 "re:" patterns in targets and
// ignore, or one pattern over 4096 bytes, is refused at parse naming the
// count or the size and the bound; 1000 such patterns made `hsdb plan` of a
// Kimi-K2-sized config run for 66 s (each is tried against all 7·10^4
// linear modules). Exact module names are not counted (they cost a string
// comparison): 5000 of them parse.
func TestCompressedPatternBounds(t *testing.T) {
	cfg := func(ignore []string) []byte {
		b, err := json.Marshal(ignore)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(`{"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {"targets": ["Linear"],
			"weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32}}}, "ignore": ` + string(b) + `}`)
	}
	many := func(n int, f string) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(f, i))
		}
		return out
	}
	for _, c := range []struct {
		ignore []string
		want   string
	}{
		{many(129, `re:.*layers\.%d\.self_attn.*`), "129 \"re:\" patterns in targets and ignore, more than the 128"},
		{[]string{"re:" + strings.Repeat("a", 4097)}, "a pattern of 4097 bytes, more than the 4096"},
	} {
		if _, err := Parse(cfg(c.ignore)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d ignore entries: %v; want an error containing %q", len(c.ignore), err, c.want)
		}
	}
	for _, ok := range [][]string{many(128, `re:.*layers\.%d\.self_attn.*`), many(5000, "model.layers.%d.self_attn.q_a_proj"), {"re:" + strings.Repeat("a", 4096)}} {
		if _, err := Parse(cfg(ok)); err != nil {
			t.Errorf("%d ignore entries: %v", len(ok), err)
		}
	}
}
