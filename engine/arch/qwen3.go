package arch

// Qwen3: HF Qwen3ForCausalLM (modeling_qwen3.py), vLLM Qwen3ForCausalLM: the
// Llama decoder with an RMSNorm over each query and key head (q_norm, k_norm,
// weights [head_dim]) applied before RoPE, and an explicit head_dim.
// Absent fields take Qwen3Config's defaults (Qwen3-8B's), head_dim 128
// among them (not hidden_size / num_attention_heads).
var qwen3Arch = &llamaVariant{arch: "Qwen3ForCausalLM", modelClass: "Qwen3Model", layerClass: "Qwen3DecoderLayer",
	attnClass: "Qwen3Attention", mlpClass: "Qwen3MLP", qkNorm: true, defTheta: 1000000, window: qwenWindow, class: "Qwen3Config",
	fields: llamaFields(llamaSizes{vocab: 151936, hidden: 4096, inter: 22016, layers: 32, heads: 32, maxPos: 32768},
		append(qwenWindowFields(), size("head_dim", 128), field{name: "attention_bias", def: false})...)}

func init() { registerLlama(qwen3Arch, "qwen3") }
