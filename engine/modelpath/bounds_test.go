package modelpath_test

import (
	"errors"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
)

// TestDimsFromConfigBounds: the sizes a check reads from config.json (even
// of an architecture hsdb cannot run) are bounded as model.ParseConfig
// bounds them (cases 7-9 of ../shared/cases/README.md), at the top level
// and in a wrapper's text_config.
func TestDimsFromConfigBounds(t *testing.T) {
	for _, c := range []struct{ cfg, want string }{
		{`{"architectures": ["SomeNewForCausalLM"], "hidden_size": 64, "num_attention_heads": 1099511627776}`, "num_attention_heads 1099511627776"},
		{`{"architectures": ["SomeNewForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1e9}`, "num_hidden_layers 1e9"},
		{`{"architectures": ["Wrapper"], "text_config": {"hidden_size": 64, "torch_dtype": "float7"}}`, `config.json: text_config: torch_dtype "float7"`},
	} {
		_, err := modelpath.DimsFromConfigJSON([]byte(c.cfg), "config.json")
		if !errors.Is(err, model.ErrConfigLimit) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := modelpath.DimsFromConfigJSON([]byte(`{"architectures": ["SomeNewForCausalLM"], "hidden_size": 64}`), "config.json"); err != nil {
		t.Error(err)
	}
}
