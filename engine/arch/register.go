package arch

// Llama: HF LlamaForCausalLM (modeling_llama.py); vLLM LlamaForCausalLM.
var llamaArch = &llamaVariant{arch: "LlamaForCausalLM", modelClass: "LlamaModel", layerClass: "LlamaDecoderLayer",
	attnClass: "LlamaAttention", mlpClass: "LlamaMLP", defTheta: 10000}

func init() { registerLlama(llamaArch, "llama") }
