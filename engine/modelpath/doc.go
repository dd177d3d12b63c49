// Package modelpath says what a model path names (the embedded
// stories260K, an HF directory, a llama2.c checkpoint: Resolve) and reads a
// model's sizes from its config alone, without loading weights (ConfigJSON,
// ConfigDims): what the engine's loader, `hsdb check` and a dump's manifest
// all need to agree on.
//
// It imports engine/model (Dims, config parsing), engine/llama2c (the
// config a .bin header implies) and engine/stories; it must not import the
// engine driver, a backend, inspect/, repl/ or cmd/, so that the capture
// and check tools can use it without the engine.
package modelpath
