// Package stats computes what hsdb shows about a tensor: statistics (count,
// mean, std, min, max, absmax, L2 norm, NaN, Inf and zero counts) from
// one-pass float64 accumulators, histograms, the channels with the largest
// magnitudes ("massive activations"), the gathered full tensor of a sharded
// or partial (pre-all-reduce) tensor, element-wise comparison of two
// ranks' copies, and cosine similarity from accumulated sums (Cosine).
//
// It works on host data (engine/tensor) and the plain sharding labels of
// engine/model, and returns structs and plain numbers. It is the bottom of
// inspect/: it must not import another inspect package, the engine driver,
// a backend, repl/, cmd/ or any terminal styling (only repl/ renders).
package stats
