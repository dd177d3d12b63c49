// Package arch holds hsdb's model architectures, registered with
// engine/model by HF architectures[0]: LlamaForCausalLM (llama.go, the shared
// decoder), MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, and
// DeepseekV2ForCausalLM / DeepseekV3ForCausalLM (deepseek.go, also Kimi-K2),
// one file per architecture. Blocks shared by architectures live in their
// own files: multi-head latent attention (mla.go), DeepSeek's mixture of
// experts and its router (moe.go, moe_router.go), the SwiGLU MLP
// (gatedmlp.go), block-fp8 dequantization (fp8.go). Each architecture
// decodes its config.json into a typed config, builds vLLM's module tree
// (paths, class names, per-rank shard shapes), loads a rank's shard of the
// weights, and runs a forward step emitting every site.
//
// Architectures use engine/model (building blocks, sites, loader) and the
// backend.Device op interface; they never import a backend implementation.
package arch
