// Package cpu is hsdb's pure-Go backend: every op of backend.Device in
// float32 on the host, using all cores for large matrix products and
// attention, and an in-memory implementation of backend.Comm that lets N
// goroutines act as N tensor-parallel ranks ("virtual ranks").
//
// Weights may stay in their stored dtype (f32, bf16, f16) and alias a
// memory-mapped checkpoint; they are widened to float32 block by block inside
// Linear and Embedding. Activations are always float32.
//
// It imports engine/tensor and engine/backend only.
package cpu
