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

// TestFP8SkipListBounds: an empty modules_to_not_convert entry (a
// substring of every name: the plan counted every fp8 weight dense while
// the load read them quantized) and a list over 4096 entries (each tried
// against every weight) are refused naming the field; a short list parses.
func TestFP8SkipListBounds(t *testing.T) {
	cfg := func(skip []string) []byte {
		b, err := json.Marshal(skip)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(`{"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ` + string(b) + `}`)
	}
	big := make([]string, 4097)
	for i := range big {
		big[i] = fmt.Sprintf("model.layers.%d.mlp", i)
	}
	for _, c := range []struct {
		skip []string
		want string
	}{
		{[]string{"lm_head", ""}, "modules_to_not_convert[1] is empty"},
		{big, "modules_to_not_convert has 4097 entries, more than the 4096"},
	} {
		if _, err := Parse(cfg(c.skip)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d entries: %v; want an error containing %q", len(c.skip), err, c.want)
		}
	}
	s, err := Parse(cfg(big[:4096]))
	if err != nil {
		t.Fatal(err)
	}
	if _, q := s.Planned("model.layers.3.mlp.down_proj.weight", 128, 128); q {
		t.Error("model.layers.3.mlp.down_proj.weight planned quantized; modules_to_not_convert lists model.layers.3.mlp")
	}
	if _, q := s.Planned("model.layers.3.self_attn.o_proj.weight", 128, 128); !q {
		t.Error("model.layers.3.self_attn.o_proj.weight planned dense; nothing skips it")
	}
}

// TestEmptyQuantConfigBothLevels: quantization_config {} has no
// quant_method and is refused at the top level and inside a wrapper's
// text_config alike (text_config's was read as no quantization, the top
// level's refused); absent and null mean dense weights at both.
func TestEmptyQuantConfigBothLevels(t *testing.T) {
	for _, c := range []struct{ cfg, want string }{
		{`{"quantization_config": {}}`, `quant_method "" is not supported`},
		{`{"text_config": {"quantization_config": {}}}`, `config.json text_config: quantization_config: quant_method "" is not supported`},
		{`{"text_config": {"quantization_config": {"quant_method": "awq"}}}`, `config.json text_config: quantization_config: quant_method "awq" is not supported`},
		{`{"text_config": {"quantization_config": null}}`, ""},
		{`{"quantization_config": null, "text_config": {}}`, ""},
		{`{}`, ""},
	} {
		s, err := FromConfig([]byte(c.cfg))
		switch {
		case c.want == "" && (err != nil || s != nil):
			t.Errorf("%s: scheme %v, err %v; want dense weights", c.cfg, s, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.cfg, err, c.want)
		}
	}
}
