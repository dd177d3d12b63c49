package arch

// Mistral: HF MistralForCausalLM (modeling_mistral.py). vLLM runs it with its
// Llama classes; the one difference is the sliding window: with
// sliding_window W set, every layer's token attends to the last W positions
// (its own included). Absent fields take MistralConfig's defaults
// (Mistral-7B-v0.1's: a window of 4096; null is no window).
var mistralArch = &llamaVariant{arch: "MistralForCausalLM", modelClass: "MistralModel", layerClass: "MistralDecoderLayer",
	attnClass: "MistralAttention", mlpClass: "MistralMLP", defTheta: 10000, class: "MistralConfig",
	fields: llamaFields(llamaSizes{vocab: 32000, hidden: 4096, inter: 14336, layers: 32, heads: 32, maxPos: 4096 * 32},
		opt("num_key_value_heads", 8, "num_attention_heads").sizes(), opt("head_dim", nil, "hidden_size / num_attention_heads"),
		opt("sliding_window", 4096, "no window")),
	window: func(c *LlamaConfig, layer int) int {
		if c.SlidingWindow == nil {
			return 0
		}
		return *c.SlidingWindow
	}}

func init() { registerLlama(mistralArch, "mistral") }
