package model_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"hsdb/engine/model"
)

// TestCheckBounds: every size field is an integer within its limit, written
// in any JSON number syntax; dtype fields are torch float dtypes; the layer
// × expert product is bounded. Each refusal names the field, the value as
// written and what was expected.
func TestCheckBounds(t *testing.T) {
	for _, c := range []struct {
		json string
		want string // "" accepts
	}{
		{`{"num_hidden_layers": 61, "hidden_size": 7168, "torch_dtype": "bfloat16"}`, ""},
		{`{"num_hidden_layers": 4096, "q_lora_rank": null, "dtype": null}`, ""},
		{`{"num_hidden_layers": 1e3, "torch_dtype": "torch.float16"}`, ""},
		{`{"num_hidden_layers": 1e9}`, "num_hidden_layers 1e9 is out of range (want at most 4096)"},
		{`{"num_hidden_layers": 1000000000}`, "num_hidden_layers 1000000000 is out of range (want at most 4096)"},
		{`{"num_hidden_layers": 4097}`, "num_hidden_layers 4097 is out of range (want at most 4096)"},
		{`{"num_attention_heads": 1099511627776}`, "num_attention_heads 1099511627776 is out of range (want at most 4096)"},
		{`{"vocab_size": 1e400}`, "vocab_size 1e400 is out of range (want at most 16777216)"},
		{`{"hidden_size": 18446744073709551617}`, "hidden_size 18446744073709551617 is out of range"},
		{`{"hidden_size": -7168}`, "hidden_size -7168 is out of range (want an integer from 1 to 262144)"},
		{`{"intermediate_size": 2.5}`, "intermediate_size 2.5 is not an integer (want an integer from 1 to 1048576)"},
		{`{"intermediate_size": "18432"}`, `intermediate_size: got a JSON string "18432", want an integer from 1 to 1048576`},
		{`{"dtype": "float7"}`, `dtype "float7" is not supported (want one of float32, bfloat16, float16, float64)`},
		{`{"torch_dtype": "float7"}`, `torch_dtype "float7" is not supported (want one of float32, bfloat16, float16, float64)`},
		{`{"torch_dtype": "int8"}`, `torch_dtype "int8" is not supported`},
		{`{"torch_dtype": 16}`, `torch_dtype: got a JSON number 16, want a string, one of float32, bfloat16, float16, float64`},
		{`{"num_hidden_layers": 4096, "n_routed_experts": 16384}`, "num_hidden_layers 4096 is out of range (want num_hidden_layers × (routed experts + 1) at most 131072; with 16384 experts that is at most 7 layers)"},
		{`{"num_hidden_layers": 341, "num_experts": 384}`, "num_hidden_layers 341 is out of range (want num_hidden_layers × (routed experts + 1) at most 131072; with 384 experts that is at most 340 layers)"},
		{`{"num_hidden_layers": 340, "n_routed_experts": 384, "num_experts_per_tok": 8}`, ""},
	} {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.json), &raw); err != nil {
			t.Fatal(err)
		}
		err := model.CheckBounds(raw, "config.json")
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.json, err)
			}
			continue
		}
		var le *model.LimitError
		if !errors.As(err, &le) || !errors.Is(err, model.ErrConfigLimit) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.json, err, c.want)
		}
	}
}

// boundsParsed counts the calls of the test architecture's Parse.
var boundsParsed int

func init() {
	model.Register(model.Architecture{Name: "BoundsTestForCausalLM", Parse: func(map[string]json.RawMessage) (model.Config, error) {
		boundsParsed++
		return nil, errors.New("parsed")
	}})
}

// TestCheckBoundsParseConfig: ParseConfig checks the bounds of the object it
// hands to the architecture (the top level, or a wrapper's text_config,
// named in the error) and never calls Parse with a value out of range.
func TestCheckBoundsParseConfig(t *testing.T) {
	for _, c := range []struct{ cfg, want string }{
		{`{"architectures": ["BoundsTestForCausalLM"], "num_hidden_layers": 1e9}`, "config.json: num_hidden_layers 1e9"},
		{`{"architectures": ["Wrapper"], "num_hidden_layers": 1e9, "text_config": {"architectures": ["BoundsTestForCausalLM"], "num_attention_heads": 1099511627776}}`,
			"config.json: text_config: num_attention_heads 1099511627776"},
	} {
		before := boundsParsed
		_, _, err := model.ParseConfig([]byte(c.cfg))
		if !errors.Is(err, model.ErrConfigLimit) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.cfg, err, c.want)
		}
		if boundsParsed != before {
			t.Errorf("%s: the architecture parsed a config out of bounds", c.cfg)
		}
	}
	if _, _, err := model.ParseConfig([]byte(`{"architectures": ["BoundsTestForCausalLM"], "num_hidden_layers": 3}`)); err == nil || err.Error() != "parsed" {
		t.Errorf("a config within bounds: err = %v, want the architecture's", err)
	}
}

// TestCheckTreeSize: layers × (experts + 1) × world above MaxTreeEntries is
// refused naming the three numbers; DeepSeek-V3's 61 × 257 × 8 passes.
func TestCheckTreeSize(t *testing.T) {
	d := &model.Dims{Layers: 61, Named: map[string]int{"n_routed_experts": 256}}
	if err := model.CheckTreeSize(d, 8); err != nil {
		t.Error(err)
	}
	err := model.CheckTreeSize(d, 512)
	if !errors.Is(err, model.ErrConfigLimit) || !strings.Contains(err.Error(), "num_hidden_layers 61 × (n_routed_experts 256 + 1) × world size 512") {
		t.Errorf("err = %v", err)
	}
}
