// Package nn holds the building blocks hsdb's architectures are composed of,
// each declared once: column-parallel, row-parallel and merged
// column-parallel linears (QKVParallelLinear, MergedColumnParallelLinear),
// the vocab-parallel embedding and LM head, RMSNorm, the gated (SwiGLU) MLP,
// grouped-query attention, multi-head latent attention and the
// mixture-of-experts block, with vLLM's class names and tensor-parallel
// splits.
//
// A block is constructed from a path Builder (candle-nn's VarBuilder:
// vb.Pp("self_attn").Pp("o_proj")). The same construction adds the block's
// module to the model tree (vLLM class, parameters with full shapes and
// per-rank ranges, the site's tensor names) when the builder is in tree mode,
// and loads the rank's shard of its weights when it is in load mode; its
// Forward emits the block's own site with replicated / sharded / partial
// labels. An architecture writes one build function and runs it in both
// modes (Tree, Load), so its tree, loading and sites cannot disagree.
//
// It imports engine/model, engine/backend, engine/tensor and
// engine/backend/moeref (the host reference of MoE routing, no device
// code); never a backend implementation, engine/arch, inspect or repl.
package nn
