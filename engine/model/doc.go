// Package model is the frame every architecture is built in: configs and
// the architecture registry, the module tree with vLLM class names and
// per-rank shard shapes, sites and the two-phase hook, the per-rank context
// (device, communicator, KV cache, call chain) through which a forward step
// emits sites, the weight loader that checks shapes and slices each rank's
// shard, the tensor-parallel plan (heads, kv-head replication, vocab
// padding) as vLLM splits models, and RoPE frequency rules.
//
// It imports engine/backend (the op interface) and engine/tensor, never a
// backend implementation, and nothing of repl/ or inspect/.
package model
