package model

import (
	"math"
	"strings"
	"testing"
)

// TestRoPEDegenerate: rope factors that make the inverse
// frequencies Inf or NaN (a linear or yarn factor of 0, a negative factor,
// yarn's betas or original length 0, theta 1) were accepted and every
// logit came out NaN; each is now one error naming the field.
func TestRoPEDegenerate(t *testing.T) {
	for _, c := range []struct{ cfg, field string }{
		{`{"rope_parameters":{"rope_type":"linear","factor":0}}`, "factor"},
		{`{"rope_parameters":{"rope_type":"linear","factor":-2}}`, "factor"},
		{`{"rope_parameters":{"rope_type":"yarn","factor":0,"original_max_position_embeddings":16}}`, "factor"},
		{`{"rope_parameters":{"rope_type":"yarn","factor":-2,"original_max_position_embeddings":16}}`, "factor"},
		{`{"rope_parameters":{"rope_type":"yarn","factor":4,"original_max_position_embeddings":0}}`, "original_max_position_embeddings"},
		{`{"rope_parameters":{"rope_type":"yarn","factor":4,"original_max_position_embeddings":16,"beta_fast":0}}`, "beta_fast"},
		{`{"rope_parameters":{"rope_type":"yarn","factor":4,"original_max_position_embeddings":16,"beta_slow":-1}}`, "beta_slow"},
		{`{"rope_parameters":{"rope_type":"yarn","factor":4,"original_max_position_embeddings":16,"rope_theta":1}}`, "rope_theta"},
		{`{"rope_parameters":{"rope_type":"yarn","factor":4,"original_max_position_embeddings":16,"attention_factor":-1}}`, "attention_factor"},
		{`{"rope_scaling":{"type":"llama3","factor":8,"low_freq_factor":-1,"high_freq_factor":4,"original_max_position_embeddings":8192}}`, "low_freq_factor"},
		// yarn without factor: max_position_embeddings 0 / 16 = 0.
		{`{"rope_parameters":{"rope_type":"yarn","original_max_position_embeddings":16}}`, "factor"},
	} {
		_, err := ParseRoPE(rawConfig(t, c.cfg), 0, 10000)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want an error naming %s", c.cfg, err, c.field)
		}
	}
	// What stays accepted has finite frequencies (a factor below 1 is odd
	// but computable; HF only warns).
	for _, cfg := range []string{
		`{"rope_parameters":{"rope_type":"linear","factor":0.5}}`,
		`{"rope_parameters":{"rope_type":"yarn","factor":4,"original_max_position_embeddings":16,"rope_theta":10000}}`,
		`{"rope_scaling":{"type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192},"rope_theta":500000}`,
	} {
		c, err := ParseRoPE(rawConfig(t, cfg), 64, 10000)
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		inv, ms := c.InvFreq(16)
		for i, f := range inv {
			if !(f > 0) || math.IsInf(float64(f), 0) {
				t.Errorf("%s: inv_freq[%d] = %v", cfg, i, f)
			}
		}
		if !(ms > 0) || math.IsInf(float64(ms), 0) {
			t.Errorf("%s: attention factor %v", cfg, ms)
		}
	}
}

// TestTextConfigNotObject: a wrapper whose text_config is not an
// object named Go's decoder types; it now says what was expected.
func TestTextConfigNotObject(t *testing.T) {
	for _, tc := range []string{`5`, `[]`, `"llama"`} {
		_, _, err := ParseConfig([]byte(`{"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", "text_config": ` + tc + `}`))
		if err == nil || !strings.Contains(err.Error(), "text_config is "+tc+", want a JSON object") || strings.Contains(err.Error(), "Go value") {
			t.Errorf("text_config %s: %v", tc, err)
		}
	}
	// A pretty-printed list holding the config is named by kind and size
	// (64 bytes, counted by hand), not cut after 40 bytes across its lines.
	list := "[\n  {\n    \"hidden_size\": 7168,\n    \"num_hidden_layers\": 61\n  }\n]"
	_, _, err := ParseConfig([]byte(`{"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", "text_config": ` + list + `}`))
	if want := "config.json: text_config is a JSON array of 64 bytes, want a JSON object"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("text_config as a list: %v\nwant %s", err, want)
	}
}
