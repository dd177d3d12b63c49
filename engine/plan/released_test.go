package plan_test

import (
	"os"
	"strconv"
	"testing"

	"hsdb/engine/plan"
	"hsdb/engine/quant"
	"hsdb/engine/tensor"
)

// Released config.json values (the fields the plan reads), as published on
// the Hugging Face hub.
const (
	llama31_8B = `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": false,
"max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
"high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "hidden_act": "silu", "torch_dtype": "bfloat16"}`
	// CodeLlama-7b-hf: vocabulary 32016, not a multiple of 64.
	codeLlama7B = `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32016, "tie_word_embeddings": false,
"max_position_embeddings": 16384, "rms_norm_eps": 1e-05, "rope_theta": 1000000, "hidden_act": "silu", "torch_dtype": "bfloat16"}`
	// Qwen2.5-1.5B: q/k/v biases, 2 kv heads (replicated at --tp 4), tied embeddings.
	qwen25_1_5B = `{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1536, "intermediate_size": 8960,
"num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true,
"max_position_embeddings": 131072, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "use_sliding_window": false,
"max_window_layers": 21, "hidden_act": "silu", "torch_dtype": "bfloat16"}`
	// Qwen3-4B(-FP8): tied embeddings, q_norm/k_norm, intermediate 9728.
	qwen3_4B = `{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2560, "intermediate_size": 9728,
"num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
"tie_word_embeddings": true, "max_position_embeddings": 40960, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "attention_bias": false,
"use_sliding_window": false, "sliding_window": null, "max_window_layers": 36, "hidden_act": "silu", "torch_dtype": "bfloat16"}`
	// Qwen3-4B-FP8's quantization_config.
	qwenFP8 = `{"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}`
	// DeepSeek-V2-Lite: MLA without q_lora_rank (q_proj), 64 experts of
	// 1408, 2 shared, softmax routing (no correction bias).
	deepseekV2Lite = `{"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048,
"intermediate_size": 10944, "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16,
"num_key_value_heads": 16, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
"moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
"vocab_size": 102400, "max_position_embeddings": 163840, "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax",
"topk_method": "greedy", "n_group": 1, "topk_group": 1, "norm_topk_prob": false, "tie_word_embeddings": false, "rms_norm_eps": 1e-06,
"rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707,
"original_max_position_embeddings": 4096, "type": "yarn"}, "hidden_act": "silu", "torch_dtype": "bfloat16"}`
)

// withQuant returns cfg with quantization_config q added.
func withQuant(cfg, q string) string { return cfg[:len(cfg)-1] + `, "quantization_config": ` + q + `}` }

// planReleased plans cfg at --tp world for T = 4096 tokens in bf16 as the
// CUDA backend keeps it (quantized weights as stored).
func planReleased(t *testing.T, cfg string, world int) *plan.Plan {
	t.Helper()
	tr, d := tree(t, cfg, world, false)
	qs, err := quant.FromConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	o := plan.Options{World: world, Tokens: 4096, Act: plan.ActivationDType(tensor.Invalid, d)}
	if qs != nil {
		o.Quant = qs
	}
	p, err := plan.New(tr, d, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ranks) != world {
		t.Fatalf("%d ranks, want %d", len(p.Ranks), world)
	}
	return p
}

// checkRanks fails unless every rank of p holds the hand-derived weights,
// quantized part and KV cache (a zero want is a real expectation, not
// "unchecked": fail closed).
func checkRanks(t *testing.T, what string, p *plan.Plan, weights, quantized, kv int64) {
	t.Helper()
	if weights <= 0 || kv <= 0 {
		t.Fatalf("%s: a hand calculation of %d weight bytes, %d KV bytes", what, weights, kv)
	}
	for _, r := range p.Ranks {
		if r.Weights != weights || r.QuantizedWeights != quantized || r.KV != kv {
			t.Errorf("%s rank %d: weights %d (quantized %d), KV %d; want %d (%d), %d", what, r.Rank, r.Weights, r.QuantizedWeights, r.KV,
				weights, quantized, kv)
		}
	}
}

// fp8Block is the bytes of an fp8 weight shard [out, in] with a float32
// scale per 128×128 block (partial edge blocks count whole).
func fp8Block(out, in int64) int64 { return out*in + 4*((out+127)/128)*((in+127)/128) }

// TestPlanReleasedDense: Llama-family models as released, per rank at --tp
// 1, 2 and 8 (4 for Qwen2.5-1.5B, whose 12 heads do not split 8 ways), T =
// 4096 tokens (a KV capacity of 4096 rows), bf16 (2 bytes), by hand from
// vLLM's split: embed_tokens and lm_head vocab-parallel over the
// vocabulary padded to a multiple of 64, q/k/v and gate/up split by output
// rows (kv heads replicated when fewer than ranks, one per rank), o_proj
// and down_proj by input columns, norms replicated.
//
// Llama-3.1-8B (H 4096, I 14336, 32 layers, 32 heads, 8 kv heads of 128,
// vocab 128256 = 2004·64): per rank embed + head 2·(128256/tp)·4096·2,
// norm 4096·2, and per layer norms 2·4096·2 + q (4096/tp)·4096·2 + k, v
// 2·(1024/tp)·4096·2 + o 4096·(4096/tp)·2 + gate, up, down
// 3·(14336/tp)·4096·2. At --tp 1: 2·128256·4096·2 = 2101346304, 8192, and
// 32 · (16384 + 33554432 + 16777216 + 33554432 + 352321536) =
// 32 · 436224000 = 13959168000: 16060522496 bytes (8030261248 parameters,
// the published 8.03B). KV: 32 layers · 4096 · 2 · (8/tp)·128 · 2 =
// 536870912/tp.
//
// CodeLlama-7b (H 4096, I 11008, 32 layers, 32 heads = kv heads, vocab
// 32016 padded to 32064 = 501·64): embed + head 2·(32064/tp)·4096·2 =
// 525336576/tp; per layer 16384 + 4·4096·(4096/tp)·2 + 3·(11008/tp)·4096·2
// = 16384 + (134217728 + 270532608)/tp; norm 8192. --tp 8: 65667072 + 8192
// + 32·(16384 + 50593792) = 1685200896. KV 32 · 4096 · 2 · (4096/tp) · 2.
//
// Qwen2.5-1.5B (H 1536, I 8960, 28 layers, 12 heads, 2 kv heads of 128,
// vocab 151936 = 2374·64, tied, q/k/v bias): embed (151936/tp)·1536·2,
// norm 3072, per layer norms 6144 + q (1536/tp)·1536·2 + its bias
// (1536/tp)·2 + k, v 2·kv_r·128·(1536+1)·2 + o 1536·(1536/tp)·2 + MLP
// 3·(8960/tp)·1536·2, kv_r = 2/tp, and 1 at --tp 4 (3 query heads and one
// of the 2 kv heads per rank, as vLLM's QKVParallelLinear replicates
// them); KV 28 · 4096 · 2 · kv_r·128 · 2, the same at --tp 2 and 4.
func TestPlanReleasedDense(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		tp        int
		weights   int64
		kv        int64
	}{
		{"Llama-3.1-8B", llama31_8B, 1, 2*128256*4096*2 + 4096*2 + 32*(2*4096*2+4096*4096*2+2*1024*4096*2+4096*4096*2+3*14336*4096*2), 32 * 4096 * 2 * 8 * 128 * 2},
		{"Llama-3.1-8B", llama31_8B, 2, 2*64128*4096*2 + 4096*2 + 32*(2*4096*2+2048*4096*2+2*512*4096*2+4096*2048*2+3*7168*4096*2), 32 * 4096 * 2 * 4 * 128 * 2},
		{"Llama-3.1-8B", llama31_8B, 8, 2*16032*4096*2 + 4096*2 + 32*(2*4096*2+512*4096*2+2*128*4096*2+4096*512*2+3*1792*4096*2), 32 * 4096 * 2 * 1 * 128 * 2},
		{"CodeLlama-7b", codeLlama7B, 1, 2*32064*4096*2 + 4096*2 + 32*(2*4096*2+4*4096*4096*2+3*11008*4096*2), 32 * 4096 * 2 * 4096 * 2},
		{"CodeLlama-7b", codeLlama7B, 2, 2*16032*4096*2 + 4096*2 + 32*(2*4096*2+4*2048*4096*2+3*5504*4096*2), 32 * 4096 * 2 * 2048 * 2},
		{"CodeLlama-7b", codeLlama7B, 8, 2*4008*4096*2 + 4096*2 + 32*(2*4096*2+4*512*4096*2+3*1376*4096*2), 32 * 4096 * 2 * 512 * 2},
		{"Qwen2.5-1.5B", qwen25_1_5B, 1, 151936*1536*2 + 1536*2 + 28*(2*1536*2+1536*1537*2+2*256*1537*2+1536*1536*2+3*8960*1536*2), 28 * 4096 * 2 * 256 * 2},
		{"Qwen2.5-1.5B", qwen25_1_5B, 2, 75968*1536*2 + 1536*2 + 28*(2*1536*2+768*1537*2+2*128*1537*2+1536*768*2+3*4480*1536*2), 28 * 4096 * 2 * 128 * 2},
		{"Qwen2.5-1.5B", qwen25_1_5B, 4, 37984*1536*2 + 1536*2 + 28*(2*1536*2+384*1537*2+2*128*1537*2+1536*384*2+3*2240*1536*2), 28 * 4096 * 2 * 128 * 2},
	} {
		checkRanks(t, c.name+" --tp "+strconv.Itoa(c.tp), planReleased(t, c.cfg, c.tp), c.weights, 0, c.kv)
	}
}

// TestPlanReleasedMLA: DeepSeek-V2-Lite (MLA without q_lora_rank: q_proj
// [16·192, 2048] split by heads; kv_a_proj_with_mqa [576, 2048] and
// kv_a_layernorm [512] replicated; kv_b_proj [16·256, 512] split by heads;
// o_proj [2048, 16·128] by columns), layer 0 dense (I 10944), 26 MoE layers
// of a bf16 router [64, 2048] (softmax routing: no correction bias), 64
// experts of 1408 and 2 shared (2816) split over ranks, vocab 102400 =
// 1600·64. Per rank at --tp:
//
//	embed + head 2·(102400/tp)·2048·2, norm 4096
//	per layer: norms 8192, q (3072/tp)·2048·2, kv_a 576·2048·2 = 2359296,
//	  kv_a_layernorm 1024, kv_b (4096/tp)·512·2, o 2048·(2048/tp)·2
//	layer 0: 3·(10944/tp)·2048·2
//	layers 1-26: router 64·2048·2 = 262144, experts 64·3·(1408/tp)·2048·2,
//	  shared 3·(2816/tp)·2048·2
//
// KV: MLA's latent, 512 + 64 = 576 values per token and layer on every
// rank: 27 · 4096 · 576 · 2 = 127401984.
func TestPlanReleasedMLA(t *testing.T) {
	for _, tp := range []int64{1, 2, 8} {
		attn := 8192 + (3072/tp)*2048*2 + 576*2048*2 + 1024 + (4096/tp)*512*2 + 2048*(2048/tp)*2
		want := 2*(102400/tp)*2048*2 + 4096 +
			attn + 3*(10944/tp)*2048*2 +
			26*(attn+64*2048*2+64*3*(1408/tp)*2048*2+3*(2816/tp)*2048*2)
		checkRanks(t, "DeepSeek-V2-Lite --tp "+strconv.FormatInt(tp, 10), planReleased(t, deepseekV2Lite, int(tp)), want, 0, 27*4096*576*2)
	}
}

// TestPlanFP8ShardOffBlocks: Qwen3-4B-FP8 (128×128 fp8 blocks, float32
// scales) at --tp 8 splits intermediate_size 9728 into 1216 rows per rank,
// 9.5 blocks: model.Loader.Linear slices such a shard only after
// dequantizing it (tensor.Quantized.SliceRows refuses rows 1216:2432 of
// 128-row blocks) and keeps it dense in float32 (the default --dtype), so
// gate_proj, up_proj and down_proj take 1216·2560·4 bytes each, not fp8's
// 1216·2560 + 4·10·20. The plan counted them as fp8: 526 MiB of weights
// per rank where the load keeps 1.45 GiB. At --tp 4 (2432 = 19·128 rows)
// every shard falls on whole blocks and stays fp8.
//
// Per rank at --tp 8, by hand: embed_tokens (tied) (151936/8)·2560·2 =
// 97239040, norm 5120; per layer norms 2·2560·2 + q_norm, k_norm 2·128·2 =
// 10752, q_proj [512, 2560] fp8 512·2560 + 4·4·20 = 1311040, k_proj and
// v_proj [128, 2560] 327680 + 4·1·20 = 327760 each, o_proj [2560, 512]
// 1311040, gate, up, down 3·1216·2560·4 = 37355520: 40643872 · 36 layers =
// 1463179392; 1560423552 in all, of which quantized 36 · (2·1311040 +
// 2·327760) = 117993600. At --tp 4: q, o [1024, 2560] 2621440 + 4·8·20 =
// 2622080, k, v [256, 2560] 655360 + 4·2·20 = 655520, gate, up, down
// [2432, 2560] 6225920 + 4·19·20 = 6227440; quantized 36 · (2·2622080 +
// 2·655520 + 3·6227440) = 36 · 25237040 = 908533440, plus embed
// (151936/4)·2560·2 = 194478080, norm 5120 and 36 · 10752.
//
// Qwen3-4B's KV at --tp 8: one kv head of 128 per rank, 36 · 4096 · 2 ·
// 128 · 2 = 75497472; at --tp 4 twice that.
func TestPlanFP8ShardOffBlocks(t *testing.T) {
	cfg := withQuant(qwen3_4B, qwenFP8)
	p := planReleased(t, cfg, 8)
	q8 := int64(36 * (2*1311040 + 2*327760))
	checkRanks(t, "Qwen3-4B-FP8 --tp 8", p, 97239040+5120+36*(10752+2*1311040+2*327760+3*1216*2560*4), q8, 36*4096*2*128*2)
	if fp8Block(512, 2560) != 1311040 || fp8Block(128, 2560) != 327760 || fp8Block(2432, 2560) != 6227440 || fp8Block(1024, 2560) != 2622080 {
		t.Fatal("the hand-derived fp8 sizes disagree with their formula")
	}
	q4 := int64(36 * (2*2622080 + 2*655520 + 3*6227440))
	checkRanks(t, "Qwen3-4B-FP8 --tp 4", planReleased(t, cfg, 4), 194478080+5120+36*10752+q4, q4, 2*36*4096*2*128*2)
	// The CPU backend dequantizes every quantized weight: the same count
	// at float32, aligned or not.
	tr, d := tree(t, cfg, 8, false)
	qs, err := quant.FromConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := plan.New(tr, d, plan.Options{World: 8, Quant: qs, Dequantize: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := cpu.Ranks[7].Weights; w != 97239040+5120+36*(10752+(512+128+128)*2560*4+2560*512*4+3*1216*2560*4) {
		t.Errorf("dequantized: %d bytes per rank", w)
	}
}

// TestPlanReleasedDeepSeekKimi: DeepSeek-V3 (fp8, 128×128 blocks) and
// Kimi-K2.5 (compressed-tensors int4, group 32, routed experts only) as
// released (testdata/configs), per rank, by hand from vLLM's split. Both:
// hidden 7168, 61 layers, q_lora 1536, kv_lora 512, rope 64, nope 128, v
// 128, moe_intermediate 2048, 1 shared expert, intermediate 18432.
//
//	fp8(o, i) = o·i + 4·⌈o/128⌉·⌈i/128⌉; int4(o, i) = o·(i/8)·4 +
//	o·(i/32)·2 + 8 (packed int32 words, bf16 group scales, the stored
//	weight_shape)
//	embed + head 2·(vocab/tp)·7168·2 (129280 = 2020·64, 163840 = 2560·64),
//	norm 14336; per layer norms 28672, q_a_layernorm 3072, kv_a_layernorm
//	1024; q_a [1536, 7168] and kv_a [576, 7168] replicated, q_b [heads·192/tp,
//	1536], kv_b [heads·256/tp, 512], o [7168, heads·128/tp];
//	dense layers: gate, up [18432/tp, 7168], down [7168, 18432/tp];
//	MoE layers: router [E, 7168] bf16, e_score_correction_bias [E] f32, E
//	experts and the shared one of gate, up [2048/tp, 7168], down [7168,
//	2048/tp].
//
// DeepSeek-V3 (128 heads, 3 dense layers, 256 experts) quantizes every
// linear but the router; Kimi-K2.5 (64 heads, 1 dense layer, 384 experts)
// only the routed experts (its ignore list: lm_head, self_attn,
// shared_experts, the dense mlp). KV: 61 · 4096 · 576 · 2 = 287834112 on
// every rank.
func TestPlanReleasedDeepSeekKimi(t *testing.T) {
	fp8 := fp8Block
	int4 := func(o, i int64) int64 { return o*(i/8)*4 + o*(i/32)*2 + 8 }
	bf16 := func(o, i int64) int64 { return o * i * 2 }
	for _, m := range []struct {
		dir                      string
		heads, dense, experts, v int64
		attnQ, denseQ, expertQ   func(o, i int64) int64
	}{
		{"deepseek-v3", 128, 3, 256, 129280, fp8, fp8, fp8},
		{"kimi-k2.5", 64, 1, 384, 163840, bf16, bf16, int4},
	} {
		raw, err := readConfig(m.dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range []int64{1, 2, 8} {
			attn := m.attnQ(1536, 7168) + m.attnQ(576, 7168) + m.attnQ(m.heads*192/tp, 1536) + m.attnQ(m.heads*256/tp, 512) + m.attnQ(7168, m.heads*128/tp)
			mlp := 2*m.denseQ(18432/tp, 7168) + m.denseQ(7168, 18432/tp)
			routed := m.experts * (2*m.expertQ(2048/tp, 7168) + m.expertQ(7168, 2048/tp))
			shared := 2*m.attnQ(2048/tp, 7168) + m.attnQ(7168, 2048/tp) // stored like the attention (Kimi: ignored, bf16)
			norms := int64(28672 + 3072 + 1024)
			moe := 61 - m.dense
			want := 2*(m.v/tp)*7168*2 + 14336 + 61*(norms+attn) + m.dense*mlp + moe*(m.experts*7168*2+m.experts*4+routed+shared)
			var quantized int64
			if m.dir == "deepseek-v3" {
				quantized = 61*attn + m.dense*mlp + moe*(routed+shared)
			} else {
				quantized = moe * routed
			}
			p := planReleased(t, string(raw), int(tp))
			checkRanks(t, m.dir+" --tp "+strconv.FormatInt(tp, 10), p, want, quantized, 61*4096*576*2)
		}
	}
}

// readConfig reads testdata/configs/DIR/config.json.
func readConfig(dir string) ([]byte, error) {
	return os.ReadFile("../../testdata/configs/" + dir + "/config.json")
}
