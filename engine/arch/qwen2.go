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
var qwen2Arch = &llamaVariant{arch: "Qwen2ForCausalLM", modelClass: "Qwen2Model", layerClass: "Qwen2DecoderLayer",
	attnClass: "Qwen2Attention", mlpClass: "Qwen2MLP", qkvBias: true, defTheta: 10000, window: qwenWindow}

func init() { registerLlama(qwen2Arch, "qwen2") }
