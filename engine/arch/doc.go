// Package arch holds hsdb's model architectures, one file each, registered
// with engine/model by HF architectures[0]: LlamaForCausalLM (llama.go, the
// shared decoder), MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM.
// Each decodes its config.json into a typed config, builds vLLM's module tree
// (paths, class names, per-rank shard shapes), loads a rank's shard of the
// weights, and runs a forward step emitting every site.
//
// Architectures use engine/model (building blocks, sites, loader) and the
// backend.Device op interface; they never import a backend implementation.
package arch
