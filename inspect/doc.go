// Package inspect computes what hsdb shows about a tensor: statistics
// (count, mean, std, min, max, absmax, L2 norm, NaN, Inf and zero counts)
// from one-pass float64 accumulators, histograms, the channels with the
// largest magnitudes ("massive activations"), the gathered full tensor of a
// sharded or partial (pre-all-reduce) tensor, and element-wise comparison of
// two ranks' copies.
//
// Captures, dumps and checks: a Capturer hook records chosen layers or site
// tensors per sequence, assembled across ranks; Dump and RunCaptureJob write
// design.md's dump atomically and re-validated; CheckPath reads hsdb dumps,
// safetensors and torch.save files (allowlisted unpickling, no code runs),
// applies the validation rules, explains wrong shapes in config terms, and
// with a Target (the engine's prefill) names what each tensor really is
// (Match) and where it departs. inspect reaches the engine only through
// Target.
//
// It works on host data (engine/tensor) and on the plain sharding labels of
// engine/model. It returns structs and plain numbers; it must not import a
// backend implementation (engine/backend/...), the engine driver, repl/ or
// any terminal styling: only repl/ renders.
package inspect
