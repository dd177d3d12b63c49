package arch

// Mistral: HF MistralForCausalLM (modeling_mistral.py). vLLM runs it with its
// Llama classes; the one difference is the sliding window: with
// sliding_window W set, every layer's token attends to the last W positions
// (its own included).
var mistralArch = &llamaVariant{arch: "MistralForCausalLM", modelClass: "MistralModel", layerClass: "MistralDecoderLayer",
	attnClass: "MistralAttention", mlpClass: "MistralMLP", defTheta: 10000,
	window: func(c *LlamaConfig, layer int) int {
		if c.SlidingWindow == nil {
			return 0
		}
		return *c.SlidingWindow
	}}

func init() { registerLlama(mistralArch, "mistral") }
