// Package backend defines what the forward pass asks of a device: tensor
// handles, the building-block ops (embedding, linear, RMSNorm, RoPE,
// attention, SiLU-and-mul, row gather/scatter), one-pass statistics where the
// data lives, and the tensor-parallel collectives (all-reduce, all-gather).
//
// Implementations: backend/cpu (pure Go, float32) and backend/cuda (build tag
// cuda). Architectures (engine/arch) reach a device only through
// engine/model's building blocks; repl/ and inspect/ see tensors through
// engine's plain types. This package imports nothing of hsdb but
// engine/tensor.
package backend
