package quant

import (
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
