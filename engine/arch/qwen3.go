package arch

// Qwen3: HF Qwen3ForCausalLM (modeling_qwen3.py), vLLM Qwen3ForCausalLM: the
// Llama decoder with an RMSNorm over each query and key head (q_norm, k_norm,
// weights [head_dim]) applied before RoPE, and an explicit head_dim.
var qwen3Arch = &llamaVariant{arch: "Qwen3ForCausalLM", modelClass: "Qwen3Model", layerClass: "Qwen3DecoderLayer",
	attnClass: "Qwen3Attention", mlpClass: "Qwen3MLP", qkNorm: true, defTheta: 1000000, window: qwenWindow}

func init() { registerLlama(qwen3Arch, "qwen3") }
