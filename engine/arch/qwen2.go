package arch

// qwenWindow is Qwen2/Qwen3's layer_types rule (HF configuration_qwen2.py):
// with use_sliding_window, layers from max_window_layers on use sliding
// attention of sliding_window positions; the others are full attention.
func qwenWindow(c *LlamaConfig, layer int) int {
	if !c.UseSlidingWindow || c.SlidingWindow == nil || layer < c.MaxWindowLayers {
		return 0
	}
	return *c.SlidingWindow
}

// Qwen2: HF Qwen2ForCausalLM (modeling_qwen2.py), vLLM Qwen2ForCausalLM: the
// Llama decoder with a bias on q_proj, k_proj and v_proj (not o_proj).
// Absent fields take Qwen2Config's defaults (Qwen2-7B's); Qwen2Config has
// no head_dim, so HF's attention derives it (as null does).
var qwen2Arch = &llamaVariant{arch: "Qwen2ForCausalLM", modelClass: "Qwen2Model", layerClass: "Qwen2DecoderLayer",
	attnClass: "Qwen2Attention", mlpClass: "Qwen2MLP", qkvBias: true, defTheta: 10000, window: qwenWindow, class: "Qwen2Config",
	fields: llamaFields(llamaSizes{vocab: 151936, hidden: 4096, inter: 22016, layers: 32, heads: 32, maxPos: 32768},
		append(qwenWindowFields(), opt("head_dim", nil, "hidden_size / num_attention_heads"))...)}

// qwenWindowFields are Qwen2Config's and Qwen3Config's num_key_value_heads
// and window fields with their defaults.
func qwenWindowFields() []field {
	return []field{opt("num_key_value_heads", 32, "num_attention_heads").sizes(), {name: "use_sliding_window", def: false},
		opt("sliding_window", 4096, "no window"), {name: "max_window_layers", def: 28}}
}

func init() { registerLlama(qwen2Arch, "qwen2") }
