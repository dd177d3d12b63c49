package arch_test

import (
	"strings"
	"testing"

	"hsdb/engine/model"
)

// TestRoutedScalingFactorRefused: routed_scaling_factor multiplies the
// routed experts' sum in float32 (HF DeepseekV3MoE, vLLM); a value that is
// +Inf there (1e39 and up), zero or negative (experts silenced or
// inverted) is refused at parse naming the field. Before, 1e300 loaded and
// made every MoE layer's output Inf or NaN. The largest finite float32 and
// the released factors (Kimi-K2's 2.827, DeepSeek-V3's 2.5) still parse.
func TestRoutedScalingFactorRefused(t *testing.T) {
	cfg := func(f string) []byte {
		return []byte(strings.Replace(deepseekV3Real, `"routed_scaling_factor":2.5`, `"routed_scaling_factor":`+f, 1))
	}
	for _, f := range []string{"1e300", "1e39", "0", "-2.5", "-1e-3"} {
		_, _, err := model.ParseConfig(cfg(f))
		if err == nil || !strings.Contains(err.Error(), "routed_scaling_factor") {
			t.Errorf("routed_scaling_factor %s: %v; want an error naming the field", f, err)
		}
	}
	for _, f := range []string{"2.5", "2.827", "3.4028234e38", "1e-30"} {
		if _, _, err := model.ParseConfig(cfg(f)); err != nil {
			t.Errorf("routed_scaling_factor %s: %v; want it accepted", f, err)
		}
	}
}

// TestWrapperConfigFaultsNamed: a multimodal wrapper (Kimi-K2.5's
// KimiK25ForConditionalGeneration) whose text_config names a language
// model hsdb does not know is reported as text_config's, not as the
// wrapper's ("architecture [KimiK25ForConditionalGeneration] is not
// supported"); and the wrapper's own dtype, which transformers applies to
// the whole model, is checked as a flat config's is ("float7" loaded).
func TestWrapperConfigFaultsNamed(t *testing.T) {
	const text = `{"model_type": "kimi_k9", "hidden_size": 96}`
	_, _, err := model.ParseConfig([]byte(`{"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", "text_config": ` + text + `, "vision_config": {}}`))
	if err == nil || !strings.Contains(err.Error(), "text_config") || !strings.Contains(err.Error(), `"kimi_k9"`) || strings.Contains(err.Error(), "KimiK25ForConditionalGeneration] (model_type \"kimi_k25\") is not supported") {
		t.Errorf("unknown text_config model_type: %v; want an error naming text_config's model_type kimi_k9", err)
	}
	inner := strings.Replace(deepseekV3Real, `"torch_dtype":"bfloat16",`, ``, 1)
	for _, c := range []struct{ top, want string }{
		{`"dtype": "float7"`, `dtype "float7"`},
		{`"torch_dtype": 5`, "config.json: torch_dtype: got a JSON number 5, want a string, one of float32, bfloat16, float16, float64"},
	} {
		_, _, err := model.ParseConfig([]byte(`{"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", ` + c.top + `, "text_config": ` + inner + `}`))
		if err == nil || !strings.HasPrefix(err.Error(), "config.json: ") || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "text_config:") {
			t.Errorf("wrapper with %s: %v; want an error naming the wrapper's %s", c.top, err, c.want)
		}
	}
	if _, _, err := model.ParseConfig([]byte(`{"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", "dtype": "bfloat16", "text_config": ` + inner + `}`)); err != nil {
		t.Errorf("wrapper with dtype bfloat16: %v", err)
	}
}

// TestMaxPositionEmbeddingsZeroRefused: max_position_embeddings 0 leaves
// no position a token may take (and YaRN's default factor, max / original,
// 0); it loaded, and every input then failed far from the cause. It is
// refused naming the field, for every architecture.
func TestMaxPositionEmbeddingsZeroRefused(t *testing.T) {
	for _, cfg := range []string{deepseekV3Real, `{"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
"num_attention_heads":4,"num_key_value_heads":4,"vocab_size":100,"max_position_embeddings":512}`} {
		for _, old := range []string{`"max_position_embeddings":163840`, `"max_position_embeddings":512`} {
			cfg = strings.Replace(cfg, old, `"max_position_embeddings":0`, 1)
		}
		_, _, err := model.ParseConfig([]byte(cfg))
		if err == nil || !strings.Contains(err.Error(), "max_position_embeddings 0") {
			t.Errorf("max_position_embeddings 0: %v; want an error naming the field", err)
		}
	}
}

// TestLlamaExplicitZeroNotDefault: num_key_value_heads 0 or head_dim 0
// written out in config.json is refused naming the field and the range
// accepted (model.CheckBounds); hsdb read a 0 as absent and put HF's
// default in its place (num_attention_heads, hidden_size /
// num_attention_heads), where HF keeps the 0 and fails. Left out or null,
// the defaults still apply.
func TestLlamaExplicitZeroNotDefault(t *testing.T) {
	const base = `{"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
"num_attention_heads":4,"vocab_size":100,"max_position_embeddings":512`
	for _, f := range []string{"num_key_value_heads", "head_dim"} {
		_, _, err := model.ParseConfig([]byte(base + `,"` + f + `":0}`))
		if want := "config.json: " + f + " 0 is out of range (want an integer from 1 to 4096)"; err == nil || err.Error() != want {
			t.Errorf("%s 0: %v; want an error naming the field", f, err)
		}
		cfg, _, err := model.ParseConfig([]byte(base + `,"` + f + `":null}`))
		if err != nil {
			t.Fatalf("%s null: %v", f, err)
		}
		if d := cfg.Dims(); d.KVHeads != 4 || d.HeadDim != 16 {
			t.Errorf("%s null: kv heads %d, head_dim %d; want HF's defaults 4 and 64/4 = 16", f, d.KVHeads, d.HeadDim)
		}
	}
}

// TestSlidingWindowZeroRefused: sliding_window 0 where a layer would use
// it (Mistral; Qwen2 with use_sliding_window) leaves a token no position to
// attend to, where hsdb read 0 as "no window" and ran full attention. It is
// refused naming the field; null, a positive window, and 0 in a Qwen2
// config that does not use its window still parse.
func TestSlidingWindowZeroRefused(t *testing.T) {
	const sizes = `"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"max_position_embeddings":512`
	for _, c := range []struct {
		cfg string
		ok  bool
	}{
		{`{"architectures":["MistralForCausalLM"],` + sizes + `,"sliding_window":0}`, false},
		{`{"architectures":["Qwen2ForCausalLM"],` + sizes + `,"sliding_window":0,"use_sliding_window":true,"max_window_layers":1}`, false},
		{`{"architectures":["MistralForCausalLM"],` + sizes + `,"sliding_window":null}`, true},
		{`{"architectures":["MistralForCausalLM"],` + sizes + `,"sliding_window":4096}`, true},
		{`{"architectures":["Qwen2ForCausalLM"],` + sizes + `,"sliding_window":0,"use_sliding_window":false}`, true},
	} {
		_, _, err := model.ParseConfig([]byte(c.cfg))
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.cfg, err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "sliding_window 0")):
			t.Errorf("%s: %v; want an error naming sliding_window 0", c.cfg, err)
		}
	}
}
