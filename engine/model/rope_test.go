package model

import (
	"encoding/json"
	"math"
	"testing"
)

func rawConfig(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestYarnFactorDefault: a YaRN config without "factor" scales by
// max_position_embeddings / original_max_position_embeddings (64/16 = 4), as
// transformers 5's _compute_yarn_parameters does.
func TestYarnFactorDefault(t *testing.T) {
	c, err := ParseRoPE(rawConfig(t, `{"rope_parameters":{"rope_type":"yarn","rope_theta":10000,"original_max_position_embeddings":16}}`), 64, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if c.Factor != 4 || c.OriginalMax != 16 {
		t.Fatalf("factor %v original %d, want 4 and 16", c.Factor, c.OriginalMax)
	}
}

// TestYarnDeepseek: DeepSeek-style YaRN (factor 4, original length 16, rope
// dim 8, theta 10000, beta 32/1, mscale = mscale_all_dim = 1), worked by
// hand from Peng et al. 2023 §3 as HF implements it:
//
//	correction dim for r rotations = 8·ln(16/(2πr)) / (2·ln 10000)
//	beta_fast 32: 8·ln(0.0796)/18.42 = -1.099 → floor -2 → clamped to 0
//	beta_slow 1:  8·ln(2.546)/18.42  =  0.406 → ceil 1
//	ramp(i) = clamp((i-0)/(1-0), 0, 1) = [0, 1, 1, 1]
//	inv_freq(i) = base(i)/4·ramp + base(i)·(1-ramp), base(i) = 10000^(-2i/8)
//
// so frequency 0 keeps its base value and the others are divided by 4; the
// attention factor is mscale(4,1)/mscale(4,1) = 1.
func TestYarnDeepseek(t *testing.T) {
	c, err := ParseRoPE(rawConfig(t, `{"rope_scaling":{"type":"yarn","factor":4,"original_max_position_embeddings":16,
		"beta_fast":32,"beta_slow":1,"mscale":1,"mscale_all_dim":1},"rope_theta":10000}`), 64, 10000)
	if err != nil {
		t.Fatal(err)
	}
	inv, ms := c.InvFreq(8)
	if len(inv) != 4 {
		t.Fatalf("inv_freq %v: %d frequencies, want 4 (head_dim 8 / 2)", inv, len(inv))
	}
	for i, f := range inv {
		want := math.Pow(10000, -float64(2*i)/8)
		if i > 0 {
			want /= 4
		}
		if !(math.Abs(float64(f)-want) <= 1e-7*want) {
			t.Errorf("inv_freq[%d] = %v, want %v", i, f, want)
		}
	}
	if ms != 1 {
		t.Errorf("attention factor %v, want 1", ms)
	}
}
