package arch_test

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Test helpers for the DeepSeek architectures: fixture-sized configs (the
// dims of testdata/hf/deepseek_* with 4 heads so that --tp 2 and 4 divide),
// seeded random weights built independently of the architecture code from
// HF's tensor names, a hook that records site tensors, and a weight source
// that counts the bytes it hands out.

// v3Config is the deepseek_v3 fixture's config.json with num_attention_heads
// 4 (the fixture has 3).
const v3Config = `{"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","vocab_size":101,"hidden_size":96,
"intermediate_size":160,"moe_intermediate_size":36,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":4,
"q_lora_rank":56,"kv_lora_rank":40,"qk_nope_head_dim":24,"qk_rope_head_dim":8,"v_head_dim":20,"n_routed_experts":8,
"n_shared_experts":1,"num_experts_per_tok":2,"n_group":4,"topk_group":2,"first_k_dense_replace":1,"routed_scaling_factor":2.5,
"norm_topk_prob":true,"rope_interleave":true,"max_position_embeddings":64,"rms_norm_eps":1e-6,"tie_word_embeddings":false,
"rope_parameters":{"rope_type":"yarn","rope_theta":10000.0,"factor":4.0,"original_max_position_embeddings":16,"beta_fast":32.0,
"beta_slow":1.0,"mscale":1.0,"mscale_all_dim":1.0},"scoring_func":"sigmoid","topk_method":"noaux_tc","dtype":"float32"}`

// v2Config is the deepseek_v2 fixture's config.json (DeepSeek-V2-Lite style:
// no q LoRA, softmax greedy routing) with 4 heads.
const v2Config = `{"architectures":["DeepseekV2ForCausalLM"],"model_type":"deepseek_v2","vocab_size":101,"hidden_size":96,
"intermediate_size":160,"moe_intermediate_size":36,"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":4,
"q_lora_rank":null,"kv_lora_rank":40,"qk_nope_head_dim":24,"qk_rope_head_dim":8,"v_head_dim":20,"n_routed_experts":8,
"n_shared_experts":1,"num_experts_per_tok":2,"n_group":1,"topk_group":1,"topk_method":"greedy","first_k_dense_replace":1,
"routed_scaling_factor":1.0,"norm_topk_prob":false,"max_position_embeddings":64,"rms_norm_eps":1e-6,"tie_word_embeddings":false,
"rope_parameters":{"rope_type":"yarn","rope_theta":10000.0,"factor":4.0,"original_max_position_embeddings":16,"beta_fast":32.0,
"beta_slow":1.0,"mscale":0.707,"mscale_all_dim":0.707},"scoring_func":"softmax","dtype":"float32"}`

// cfgMap decodes a config for the weight builder.
type cfgMap struct {
	Vocab      int  `json:"vocab_size"`
	Hidden     int  `json:"hidden_size"`
	Inter      int  `json:"intermediate_size"`
	MoeInter   int  `json:"moe_intermediate_size"`
	Layers     int  `json:"num_hidden_layers"`
	Heads      int  `json:"num_attention_heads"`
	QLora      *int `json:"q_lora_rank"`
	KVLora     int  `json:"kv_lora_rank"`
	Nope       int  `json:"qk_nope_head_dim"`
	Rope       int  `json:"qk_rope_head_dim"`
	V          int  `json:"v_head_dim"`
	Experts    int  `json:"n_routed_experts"`
	Shared     int  `json:"n_shared_experts"`
	FirstDense int  `json:"first_k_dense_replace"`
	V3         bool `json:"-"`
}

func parseCfg(t testing.TB, cfg string) cfgMap {
	t.Helper()
	var c cfgMap
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		t.Fatal(err)
	}
	c.V3 = strings.Contains(cfg, "DeepseekV3")
	return c
}

// randWeights returns seeded random weights under HF's names for c
// (modeling_deepseek_v3.py / _v2.py module paths, DeepSeek's per-expert
// layout): RMSNorm weights 1+0.1·N(0,1), e_score_correction_bias
// 0.05·N(0,1), everything else std·N(0,1).
func randWeights(c cfgMap, seed uint64, std float32) map[string]*tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := map[string]*tensor.Tensor{}
	put := func(name string, scale, offset float32, shape ...int) {
		v := make([]float32, tensor.Numel(shape))
		for i := range v {
			v[i] = offset + scale*float32(rng.NormFloat64())
		}
		w[name] = tensor.FromF32(v, shape...)
	}
	H, qk := c.Hidden, c.Nope+c.Rope
	put("model.embed_tokens.weight", std, 0, c.Vocab, H)
	put("lm_head.weight", std, 0, c.Vocab, H)
	put("model.norm.weight", 0.1, 1, H)
	for i := range c.Layers {
		p := "model.layers." + itoa(i) + "."
		put(p+"input_layernorm.weight", 0.1, 1, H)
		put(p+"post_attention_layernorm.weight", 0.1, 1, H)
		a := p + "self_attn."
		if c.QLora != nil {
			put(a+"q_a_proj.weight", std, 0, *c.QLora, H)
			put(a+"q_a_layernorm.weight", 0.1, 1, *c.QLora)
			put(a+"q_b_proj.weight", std, 0, c.Heads*qk, *c.QLora)
		} else {
			put(a+"q_proj.weight", std, 0, c.Heads*qk, H)
		}
		put(a+"kv_a_proj_with_mqa.weight", std, 0, c.KVLora+c.Rope, H)
		put(a+"kv_a_layernorm.weight", 0.1, 1, c.KVLora)
		put(a+"kv_b_proj.weight", std, 0, c.Heads*(c.Nope+c.V), c.KVLora)
		put(a+"o_proj.weight", std, 0, H, c.Heads*c.V)
		m := p + "mlp."
		mlp := func(pre string, inter int) {
			put(pre+"gate_proj.weight", std, 0, inter, H)
			put(pre+"up_proj.weight", std, 0, inter, H)
			put(pre+"down_proj.weight", std, 0, H, inter)
		}
		if i < c.FirstDense {
			mlp(m, c.Inter)
			continue
		}
		put(m+"gate.weight", std*4, 0, c.Experts, H)
		if c.V3 {
			put(m+"gate.e_score_correction_bias", 0.05, 0, c.Experts)
		}
		for e := range c.Experts {
			mlp(m+"experts."+itoa(e)+".", c.MoeInter)
		}
		mlp(m+"shared_experts.", c.MoeInter*c.Shared)
	}
	return w
}

func itoa(i int) string { return strconv.Itoa(i) }

// countingSource is a WeightSource that counts the bytes of every tensor it
// returns and remembers the names.
type countingSource struct {
	model.MapSource
	bytes atomic.Int64
	names map[string]bool
}

func newCounting(name string, w map[string]*tensor.Tensor) *countingSource {
	return &countingSource{MapSource: model.MapSource{Name: name, Tensors: w}, names: map[string]bool{}}
}

func (c *countingSource) Tensor(name string) (*tensor.Tensor, error) {
	t, err := c.MapSource.Tensor(name)
	if err == nil {
		c.bytes.Add(int64(len(t.Data)))
		c.names[name] = true
	}
	return t, err
}

func load(t testing.TB, cfg string, src model.WeightSource, opts engine.Options) *engine.Engine {
	t.Helper()
	e, err := engine.LoadSource("test", []byte(cfg), src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// prompts are three sequences of 7, 3 and 12 tokens (the fixtures' lengths).
var prompts = [][]int32{{1, 40, 17, 99, 3, 58, 21}, {2, 64, 5}, {1, 100, 81, 50, 30, 25, 33, 94, 0, 46, 70, 9}}
