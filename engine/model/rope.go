package model

import (
	"encoding/json"
	"fmt"
	"hsdb/engine/jsonerr"
	"math"
)

// RoPEConfig is a model's rotary embedding: the base theta and the scaling
// rule, read from config.json either in the legacy form (`rope_theta` plus
// `rope_scaling`) or transformers v5's `rope_parameters`. Types follow HF's
// modeling_rope_utils: "default", "linear", "llama3" (Llama 3.1), "yarn"
// (Peng et al. 2023, as DeepSeek-V3 uses).
type RoPEConfig struct {
	Type            string
	Theta           float64
	Factor          float64
	LowFreqFactor   float64 // llama3
	HighFreqFactor  float64 // llama3
	OriginalMax     int     // llama3, yarn: original_max_position_embeddings
	BetaFast        float64 // yarn
	BetaSlow        float64 // yarn
	MScale          float64 // yarn
	MScaleAllDim    float64 // yarn
	AttentionFactor float64 // yarn: explicit attention_factor, 0 if absent
	Truncate        bool    // yarn: round the correction range (default true)
}

type ropeJSON struct {
	RopeType        string   `json:"rope_type"`
	Type            string   `json:"type"`
	RopeTheta       *float64 `json:"rope_theta"`
	Factor          *float64 `json:"factor"`
	LowFreqFactor   *float64 `json:"low_freq_factor"`
	HighFreqFactor  *float64 `json:"high_freq_factor"`
	OriginalMax     *int     `json:"original_max_position_embeddings"`
	BetaFast        *float64 `json:"beta_fast"`
	BetaSlow        *float64 `json:"beta_slow"`
	MScale          *float64 `json:"mscale"`
	MScaleAllDim    *float64 `json:"mscale_all_dim"`
	AttentionFactor *float64 `json:"attention_factor"`
	Truncate        *bool    `json:"truncate"`
}

// ParseRoPE reads the rotary embedding from a config's top-level fields:
// rope_theta, and rope_scaling or else rope_parameters (transformers 5
// prefers a non-empty rope_scaling, the legacy key, when both are given).
// maxPos is max_position_embeddings (YaRN's default original length) and
// defTheta the architecture's default base when the config gives none.
// Errors name the field: a value that does not decode, a rope_type other
// than default, linear, llama3 or yarn, and values that would make the
// inverse frequencies NaN or ±Inf (rope_theta or factor not positive,
// yarn's betas or original length not positive, yarn with rope_theta 1).
func ParseRoPE(raw map[string]json.RawMessage, maxPos int, defTheta float64) (RoPEConfig, error) {
	c := RoPEConfig{Type: "default", Theta: defTheta, Factor: 1, Truncate: true}
	// A rope_theta written as null, where no other rope_theta is given, is
	// refused: transformers stores None and its rotary embedding fails;
	// taking the default would run another model silently (Llama 3's
	// 500000 read as 10000). Left out, the default applies.
	given, null := false, false
	if v, ok := raw["rope_theta"]; ok {
		if jsonerr.IsNull(v) {
			null = true
		} else {
			if err := json.Unmarshal(v, &c.Theta); err != nil {
				return c, fmt.Errorf("rope_theta: %w", jsonerr.Explain(err))
			}
			given = true
		}
	}
	nullErr := func(where string) error {
		return fmt.Errorf("%s is null; want a number (left out, the default %v applies)", where, defTheta)
	}
	var r ropeJSON
	src := ""
	// transformers 5 reads `rope_scaling or rope_parameters`
	// (convert_rope_params_to_dict): a legacy rope_scaling that is present
	// and not empty wins over rope_parameters.
	for _, key := range []string{"rope_scaling", "rope_parameters"} {
		if v, ok := raw[key]; ok && !pyFalsy(v) {
			if err := json.Unmarshal(v, &r); err != nil {
				return c, fmt.Errorf("%s: %w", key, jsonerr.Explain(err))
			}
			src = key
			break
		}
	}
	if src == "" {
		if null {
			return c, nullErr("rope_theta")
		}
		return c, nil
	}
	if r.RopeTheta != nil {
		c.Theta = *r.RopeTheta
	} else if !given {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw[src], &m) == nil && m["rope_theta"] != nil && jsonerr.IsNull(m["rope_theta"]) {
			return c, nullErr(src + ".rope_theta")
		}
		if null {
			return c, nullErr("rope_theta")
		}
	}
	switch {
	case r.RopeType != "":
		c.Type = r.RopeType
	case r.Type != "":
		c.Type = r.Type
	}
	get := func(p *float64, d float64) float64 {
		if p != nil {
			return *p
		}
		return d
	}
	c.Factor = get(r.Factor, 1)
	c.LowFreqFactor = get(r.LowFreqFactor, 1)
	c.HighFreqFactor = get(r.HighFreqFactor, 4)
	c.OriginalMax = maxPos
	if r.OriginalMax != nil {
		c.OriginalMax = *r.OriginalMax
	}
	if c.Type == "yarn" && r.Factor == nil && c.OriginalMax > 0 {
		// transformers 5 (_compute_yarn_parameters): without a factor, YaRN
		// scales by max_position_embeddings / original_max_position_embeddings.
		c.Factor = float64(maxPos) / float64(c.OriginalMax)
	}
	c.BetaFast = get(r.BetaFast, 32)
	c.BetaSlow = get(r.BetaSlow, 1)
	c.MScale = get(r.MScale, 0)
	c.MScaleAllDim = get(r.MScaleAllDim, 0)
	c.AttentionFactor = get(r.AttentionFactor, 0)
	if r.Truncate != nil {
		c.Truncate = *r.Truncate
	}
	switch c.Type {
	case "default", "linear", "llama3", "yarn":
	default:
		return c, fmt.Errorf("%s: rope_type %q is not supported (default, linear, llama3, yarn are)", src, c.Type)
	}
	if c.Theta <= 0 {
		return c, fmt.Errorf("rope_theta %v must be positive", c.Theta)
	}
	// Values the inverse frequencies divide by or take the logarithm of:
	// 0 or a negative makes them Inf or NaN (every logit NaN), which HF's
	// rope validation only warns about.
	if !(c.Factor > 0) {
		return c, fmt.Errorf("%s: factor %v must be positive", src, c.Factor)
	}
	if c.Type == "llama3" && !(c.LowFreqFactor > 0 && c.HighFreqFactor > 0) {
		return c, fmt.Errorf("%s: low_freq_factor %v and high_freq_factor %v must be positive", src, c.LowFreqFactor, c.HighFreqFactor)
	}
	if c.Type == "yarn" {
		switch {
		case c.OriginalMax <= 0:
			return c, fmt.Errorf("%s: yarn original_max_position_embeddings %d must be positive", src, c.OriginalMax)
		case !(c.BetaFast > 0 && c.BetaSlow > 0):
			return c, fmt.Errorf("%s: yarn beta_fast %v and beta_slow %v must be positive", src, c.BetaFast, c.BetaSlow)
		case c.Theta == 1:
			return c, fmt.Errorf("%s: yarn needs rope_theta other than 1 (its correction range divides by ln(rope_theta))", src)
		case c.AttentionFactor < 0:
			return c, fmt.Errorf("%s: attention_factor %v must not be negative", src, c.AttentionFactor)
		}
	}
	if c.Type == "llama3" && (c.OriginalMax <= 0 || c.HighFreqFactor == c.LowFreqFactor) {
		return c, fmt.Errorf("%s: llama3 scaling needs original_max_position_embeddings and distinct low/high_freq_factor", src)
	}
	return c, nil
}

// pyFalsy reports whether a JSON value is one Python's `or` passes over:
// null, false, 0, "", {} or [].
func pyFalsy(v json.RawMessage) bool {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return false // not valid JSON: let the decoder name it
	}
	switch y := x.(type) {
	case nil:
		return true
	case bool:
		return !y
	case float64:
		return y == 0
	case string:
		return y == ""
	case map[string]any:
		return len(y) == 0
	case []any:
		return len(y) == 0
	}
	return false
}

// YarnGetMScale is DeepSeek's yarn_get_mscale: 0.1·m·ln(scale) + 1 for
// scale > 1, else 1.
func YarnGetMScale(scale, m float64) float64 {
	if scale <= 1 {
		return 1
	}
	return 0.1*m*math.Log(scale) + 1
}

// InvFreq returns the inverse frequencies for a rotary dimension dim
// ([dim/2], float32 as HF computes them) and the factor cos and sin are
// multiplied by (YaRN's attention factor; 1 otherwise).
func (c RoPEConfig) InvFreq(dim int) ([]float32, float32) {
	half := dim / 2
	base := make([]float64, half)
	for i := range base {
		// HF: 1 / base ** (arange(0, dim, 2).float() / dim), in float32.
		exp := float64(float32(2*i) / float32(dim))
		base[i] = float64(float32(1 / float64(float32(math.Pow(c.Theta, exp)))))
	}
	out := make([]float32, half)
	mscale := float32(1)
	switch c.Type {
	case "linear":
		for i, f := range base {
			out[i] = float32(f / c.Factor)
		}
	case "llama3":
		lowWave := float64(c.OriginalMax) / c.LowFreqFactor
		highWave := float64(c.OriginalMax) / c.HighFreqFactor
		for i, f := range base {
			wave := 2 * math.Pi / f
			v := f
			if wave > lowWave {
				v = f / c.Factor
			}
			if !(wave < highWave) && !(wave > lowWave) {
				smooth := (float64(c.OriginalMax)/wave - c.LowFreqFactor) / (c.HighFreqFactor - c.LowFreqFactor)
				v = (1-smooth)*v/c.Factor + smooth*v
			}
			out[i] = float32(v)
		}
	case "yarn":
		corr := func(rot float64) float64 {
			return float64(dim) * math.Log(float64(c.OriginalMax)/(rot*2*math.Pi)) / (2 * math.Log(c.Theta))
		}
		low, high := corr(c.BetaFast), corr(c.BetaSlow)
		if c.Truncate {
			low, high = math.Floor(low), math.Ceil(high)
		}
		low, high = math.Max(low, 0), math.Min(high, float64(dim-1))
		if low == high {
			high += 0.001
		}
		for i, f := range base {
			ramp := float64(float32((float32(i) - float32(low)) / float32(high-low)))
			ramp = math.Min(math.Max(ramp, 0), 1)
			extra := 1 - ramp // inv_freq_extrapolation_factor
			interp := f / c.Factor
			out[i] = float32(interp*(1-extra) + f*extra)
		}
		af := c.AttentionFactor
		if af == 0 {
			if c.MScale != 0 && c.MScaleAllDim != 0 {
				af = YarnGetMScale(c.Factor, c.MScale) / YarnGetMScale(c.Factor, c.MScaleAllDim)
			} else {
				af = YarnGetMScale(c.Factor, 1)
			}
		}
		mscale = float32(af)
	default:
		for i, f := range base {
			out[i] = float32(f)
		}
	}
	return out, mscale
}
