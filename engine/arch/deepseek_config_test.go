package arch_test

import (
	"math"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// The released configs (config.json of deepseek-ai/DeepSeek-V3,
// DeepSeek-V2, DeepSeek-V2-Lite and moonshotai/Kimi-K2-Instruct, sizes as
// published) parse, split at --tp 8 as vLLM runs them, and their module trees
// hold the published parameter counts.

const deepseekV3Real = `{"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","vocab_size":129280,"hidden_size":7168,
"intermediate_size":18432,"moe_intermediate_size":2048,"num_hidden_layers":61,"num_nextn_predict_layers":1,"num_attention_heads":128,
"num_key_value_heads":128,"n_shared_experts":1,"n_routed_experts":256,"ep_size":1,"routed_scaling_factor":2.5,"kv_lora_rank":512,
"q_lora_rank":1536,"qk_rope_head_dim":64,"v_head_dim":128,"qk_nope_head_dim":128,"topk_method":"noaux_tc","n_group":8,"topk_group":4,
"num_experts_per_tok":8,"moe_layer_freq":1,"first_k_dense_replace":3,"norm_topk_prob":true,"scoring_func":"sigmoid","hidden_act":"silu",
"max_position_embeddings":163840,"rms_norm_eps":1e-06,"rope_theta":10000,"rope_scaling":{"beta_fast":32,"beta_slow":1,"factor":40,
"mscale":1.0,"mscale_all_dim":1.0,"original_max_position_embeddings":4096,"type":"yarn"},"tie_word_embeddings":false,
"torch_dtype":"bfloat16","quantization_config":{"activation_scheme":"dynamic","fmt":"e4m3","quant_method":"fp8","weight_block_size":[128,128]}}`

const deepseekV2LiteReal = `{"architectures":["DeepseekV2ForCausalLM"],"model_type":"deepseek_v2","vocab_size":102400,"hidden_size":2048,
"intermediate_size":10944,"moe_intermediate_size":1408,"num_hidden_layers":27,"num_attention_heads":16,"num_key_value_heads":16,
"n_shared_experts":2,"n_routed_experts":64,"routed_scaling_factor":1.0,"kv_lora_rank":512,"q_lora_rank":null,"qk_rope_head_dim":64,
"v_head_dim":128,"qk_nope_head_dim":128,"topk_method":"greedy","n_group":1,"topk_group":1,"num_experts_per_tok":6,"moe_layer_freq":1,
"first_k_dense_replace":1,"norm_topk_prob":false,"scoring_func":"softmax","hidden_act":"silu","max_position_embeddings":163840,
"rms_norm_eps":1e-06,"rope_theta":10000,"rope_scaling":{"beta_fast":32,"beta_slow":1,"factor":40,"mscale":0.707,"mscale_all_dim":0.707,
"original_max_position_embeddings":4096,"type":"yarn"},"tie_word_embeddings":false,"torch_dtype":"bfloat16"}`

const deepseekV2Real = `{"architectures":["DeepseekV2ForCausalLM"],"model_type":"deepseek_v2","vocab_size":102400,"hidden_size":5120,
"intermediate_size":12288,"moe_intermediate_size":1536,"num_hidden_layers":60,"num_attention_heads":128,"num_key_value_heads":128,
"n_shared_experts":2,"n_routed_experts":160,"routed_scaling_factor":16.0,"kv_lora_rank":512,"q_lora_rank":1536,"qk_rope_head_dim":64,
"v_head_dim":128,"qk_nope_head_dim":128,"topk_method":"group_limited_greedy","n_group":8,"topk_group":3,"num_experts_per_tok":6,
"moe_layer_freq":1,"first_k_dense_replace":1,"norm_topk_prob":false,"scoring_func":"softmax","hidden_act":"silu",
"max_position_embeddings":163840,"rms_norm_eps":1e-06,"rope_theta":10000,"rope_scaling":{"beta_fast":32,"beta_slow":1,"factor":40,
"mscale":0.707,"mscale_all_dim":0.707,"original_max_position_embeddings":4096,"type":"yarn"},"tie_word_embeddings":false,"torch_dtype":"bfloat16"}`

const kimiK2Real = `{"architectures":["DeepseekV3ForCausalLM"],"model_type":"kimi_k2","vocab_size":163840,"hidden_size":7168,
"intermediate_size":18432,"moe_intermediate_size":2048,"num_hidden_layers":61,"num_nextn_predict_layers":0,"num_attention_heads":64,
"num_key_value_heads":64,"n_shared_experts":1,"n_routed_experts":384,"routed_scaling_factor":2.827,"kv_lora_rank":512,"q_lora_rank":1536,
"qk_rope_head_dim":64,"v_head_dim":128,"qk_nope_head_dim":128,"topk_method":"noaux_tc","n_group":1,"topk_group":1,"num_experts_per_tok":8,
"moe_layer_freq":1,"first_k_dense_replace":1,"norm_topk_prob":true,"scoring_func":"sigmoid","hidden_act":"silu",
"max_position_embeddings":131072,"rms_norm_eps":1e-06,"rope_theta":50000.0,"rope_scaling":{"beta_fast":1.0,"beta_slow":1.0,"factor":32.0,
"mscale":1.0,"mscale_all_dim":1.0,"original_max_position_embeddings":4096,"type":"yarn"},"tie_word_embeddings":false,"torch_dtype":"bfloat16",
"quantization_config":{"activation_scheme":"dynamic","fmt":"e4m3","quant_method":"fp8","weight_block_size":[128,128]}}`

// TestDeepseekReleasedConfigs: published totals (DeepSeek-V3 report: 671B
// without the MTP module; DeepSeek-V2 paper: 236B; V2-Lite model card:
// 15.7B) within 0.5%, and --tp 8 / --ep 8 accepted.
func TestDeepseekReleasedConfigs(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		params    float64 // published total, 0: not checked
	}{{"DeepSeek-V3", deepseekV3Real, 671e9}, {"DeepSeek-V2", deepseekV2Real, 236e9}, {"DeepSeek-V2-Lite", deepseekV2LiteReal, 15.7e9}, {"Kimi-K2", kimiK2Real, 0}} {
		cfg, _, err := model.ParseConfig([]byte(c.cfg))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, ep := range []bool{false, true} {
			if err := cfg.(model.ExpertParallel).SetExpertParallel(ep); err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(8); err != nil {
				t.Errorf("%s ep=%v: --tp 8: %v", c.name, ep, err)
			}
		}
		n := float64(cfg.Tree(1).Root.NumParams())
		if c.params > 0 && !(math.Abs(n-c.params) <= 0.005*c.params) {
			t.Errorf("%s: %.4g parameters, published %.4g", c.name, n, c.params)
		}
	}
}

// TestDeepseekV3Estimate: DeepSeek-V3 dequantized to bf16 (the CPU backend
// with --dtype bf16; engine.PlanConfig) at --tp 8 needs about
// 671e9·2/8 bytes per rank (up to 2% more: the replicated latent
// projections, routers and norms sit on every rank). --layers 58-60 on one
// rank needs the embeddings and head (2·129280·7168·2 B = 3.45 GiB) plus
// three MoE layers of about 11.50e9 parameters each (256 experts ·
// 3·2048·7168, the shared expert, ~0.19e9 of attention) = 64.3 GiB, 67.8
// GiB in all; a 24 GiB machine is told so before anything is read (no
// checkpoint: config.json alone, as a plan before the download; with
// one, a tensor the checkpoint lacks is named first, TestPlanRefusesMissingWeights).
func TestDeepseekV3Estimate(t *testing.T) {
	p, err := engine.PlanConfig([]byte(deepseekV3Real), nil, engine.PlanOptions{TP: 8, DType: tensor.BF16, Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	for r, b := range p.Weights() {
		if want := 671e9 * 2 / 8; float64(b) < want || float64(b) > 1.02*want {
			t.Errorf("rank %d: %.4g bytes, want about %.4g", r, float64(b), want)
		}
	}
	_, err = engine.LoadSource("DeepSeek-V3", []byte(deepseekV3Real), nil,
		engine.Options{TP: 1, DType: tensor.BF16, Layers: &model.LayerRange{First: 58, Last: 60}, MemoryLimit: 24 << 30})
	if err == nil || !strings.Contains(err.Error(), "rank 0 67.8 GiB") || !strings.Contains(err.Error(), "24 GiB is available") {
		t.Errorf("err = %v", err)
	}
}

// TestDeepseekNoExpertsRefused: HF's DeepseekV3DecoderLayer builds an MoE
// layer whenever n_routed_experts is not null, so a released config edited
// to 0 experts, or to experts without num_experts_per_tok, is refused
// naming the field (it loaded as a dense model, and the load then named
// the first dense weight the MoE checkpoint lacks): 0 by the bounds every
// config is checked against (at least 1), more experts per token than
// experts by the routing. null stays dense, as vLLM reads it.
func TestDeepseekNoExpertsRefused(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{`"n_routed_experts":256`, `"n_routed_experts":0`, "config.json: n_routed_experts 0 is out of range (want an integer from 1 to 16384)"},
		{`"n_routed_experts":256`, `"n_routed_experts":-3`, "config.json: n_routed_experts -3 is out of range (want an integer from 1 to 16384)"},
		{`"num_experts_per_tok":8`, `"num_experts_per_tok":0`, "config.json: num_experts_per_tok 0 is out of range (want an integer from 1 to 16384)"},
		{`"num_experts_per_tok":8`, `"num_experts_per_tok":300`, "config.json (DeepseekV3ForCausalLM): num_experts_per_tok 300 must be in [1, n_routed_experts 256]"},
		{`"num_experts_per_tok":8`, `"num_experts_per_tok":null`, "config.json (DeepseekV3ForCausalLM): num_experts_per_tok is missing or null with n_routed_experts 256: the routing needs top-k"},
		{`"n_routed_experts":256`, `"n_routed_experts":null`, ""},
	} {
		if !strings.Contains(deepseekV3Real, c.from) {
			t.Fatalf("the released config lacks %s", c.from)
		}
		_, _, err := model.ParseConfig([]byte(strings.Replace(deepseekV3Real, c.from, c.to, 1)))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want a dense model", c.to, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s: err = %v, want %q", c.to, err, c.want)
		}
	}
}
