package model

import (
	"encoding/json"
	"testing"
)

// TestRoPEThetaNull: a rope_theta written as null, with no other
// rope_theta given, took the architecture's default silently (Llama 3's
// 500000 read as 10000); it is refused naming where the null is. Left
// out, the default applies; a null beside a rope_theta given elsewhere
// (top level or rope_parameters) is that value.
func TestRoPEThetaNull(t *testing.T) {
	for _, c := range []struct {
		cfg   string
		theta float64
		err   string
	}{
		{`{"rope_theta": null}`, 0, "rope_theta is null; want a number (left out, the default 10000 applies)"},
		{`{"rope_parameters": {"rope_type": "default", "rope_theta": null}}`, 0, "rope_parameters.rope_theta is null; want a number (left out, the default 10000 applies)"},
		{`{"rope_theta": null, "rope_parameters": {"rope_type": "default"}}`, 0, "rope_theta is null; want a number (left out, the default 10000 applies)"},
		{`{"rope_theta": null, "rope_parameters": {"rope_type": "default", "rope_theta": 500000}}`, 500000, ""},
		{`{"rope_theta": 500000, "rope_parameters": {"rope_type": "default", "rope_theta": null}}`, 500000, ""},
		{`{}`, 10000, ""},
	} {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.cfg), &raw); err != nil {
			t.Fatal(err)
		}
		r, err := ParseRoPE(raw, 64, 10000)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: err %v, want %q", c.cfg, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.cfg, err)
		case c.err == "" && r.Theta != c.theta:
			t.Errorf("%s: theta %v, want %v", c.cfg, r.Theta, c.theta)
		}
	}
}
