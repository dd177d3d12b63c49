// Package capture records hidden states for export and writes them as
// design.md's dump. A Capturer is a model.Hook that records chosen layers or
// site tensors of every pass, split per sequence of the flattened batch and
// assembled across ranks (gathered when sharded, summed when partial,
// checked equal when replicated); Dump and the batch job (RunCaptureJob,
// `hsdb capture`) write them as a manifest.json and one safetensors file
// per sequence, atomically and re-validated. It also holds what the
// manifest and inspect/check share: the manifest types, the validation
// rule names and their Status, and Target (a model to run passes on).
//
// It imports engine/model, engine/tensor, engine/safetensors,
// engine/tokenizer, engine/modelpath and inspect/stats. It uses the engine
// through Target only: it must not import the engine driver, a backend,
// inspect/check, inspect/debug, repl/ or cmd/.
package capture
