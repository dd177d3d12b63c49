// Package arch holds hsdb's model architectures, registered with
// engine/model by HF architectures[0]: LlamaForCausalLM (llama.go, the shared
// decoder), MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, and
// DeepseekV2ForCausalLM / DeepseekV3ForCausalLM (deepseek.go, also Kimi-K2),
// one file per architecture. Each decodes its config.json into a typed
// config, with one rule for absent and null fields (fields.go: HF's config
// class defaults; null only where the class gives it a meaning) and
// architectures naming a class hsdb does not support refused
// (architectures.go), and writes one build function that composes engine/nn blocks
// (linears, norms, attention, MLA, MoE); running it in tree mode gives
// vLLM's module tree (paths, class names, per-rank shard shapes), in load
// mode a rank's share of the weights, and the blocks' Forward emits every
// site, so the three cannot disagree. Quantized checkpoints are read by the
// linear blocks through engine/quant.
//
// Architectures use engine/nn, engine/model and the backend.Device op
// interface; they never import a backend implementation.
package arch
