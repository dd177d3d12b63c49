// Package inspect computes what hsdb shows about a tensor: statistics
// (count, mean, std, min, max, absmax, L2 norm, NaN, Inf and zero counts)
// from one-pass float64 accumulators, histograms, the channels with the
// largest magnitudes ("massive activations"), the gathered full tensor of a
// sharded or partial (pre-all-reduce) tensor, and element-wise comparison of
// two ranks' copies.
//
// It works on host data (engine/tensor) and on the plain sharding labels of
// engine/model. It returns structs and plain numbers; it must not import a
// backend implementation (engine/backend/...), the engine driver, repl/ or
// any terminal styling: only repl/ renders.
package inspect
