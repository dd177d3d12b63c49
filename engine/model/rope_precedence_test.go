package model

import (
	"math"
	"strings"
	"testing"
)

// TestRoPEScalingWinsOverParameters: with both keys in config.json,
// transformers 5 builds its rotary embedding from `rope_scaling or
// rope_parameters` (every config's convert_rope_params_to_dict): a
// non-empty legacy rope_scaling wins, and an empty or null one falls back
// to rope_parameters. hsdb read rope_parameters first and ignored
// rope_scaling, so such a config ran a RoPE other than HF's (here linear
// factor 4 instead of none: every inverse frequency 4 times too large)
// and a rope_scaling hsdb cannot run (dynamic) was never refused.
func TestRoPEScalingWinsOverParameters(t *testing.T) {
	c, err := ParseRoPE(rawConfig(t, `{"rope_parameters":{"rope_type":"default","rope_theta":10000},
		"rope_scaling":{"rope_type":"linear","factor":4,"rope_theta":10000}}`), 64, 10000)
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := c.InvFreq(8)
	if len(inv) != 4 {
		t.Fatalf("inv_freq %v: want 4 frequencies", inv)
	}
	for i, f := range inv {
		want := math.Pow(10000, -float64(2*i)/8) / 4 // linear: base(i) / factor
		if !(math.Abs(float64(f)-want) <= 1e-6*want) {
			t.Errorf("inv_freq[%d] = %v, want %v (rope_scaling's linear factor 4)", i, f, want)
		}
	}
	for _, empty := range []string{`{}`, `null`} {
		c, err := ParseRoPE(rawConfig(t, `{"rope_parameters":{"rope_type":"linear","factor":2,"rope_theta":10000},"rope_scaling":`+empty+`}`), 64, 10000)
		if err != nil || c.Type != "linear" || c.Factor != 2 {
			t.Errorf("rope_scaling %s: %+v, %v; want rope_parameters' linear factor 2", empty, c, err)
		}
	}
	_, err = ParseRoPE(rawConfig(t, `{"rope_parameters":{"rope_type":"default","rope_theta":10000},
		"rope_scaling":{"rope_type":"dynamic","factor":2}}`), 64, 10000)
	if err == nil || !strings.Contains(err.Error(), `rope_scaling: rope_type "dynamic" is not supported`) {
		t.Errorf("dynamic rope_scaling beside rope_parameters: %v, want it refused naming rope_scaling", err)
	}
}
