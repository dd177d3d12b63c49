// Package quant holds the quantized-weight schemes hsdb reads, each a
// model.QuantScheme named by config.json's quantization_config.quant_method:
// DeepSeek-V3's block-scaled fp8 ("fp8", fp8.go) and compressed-tensors'
// pack-quantized int4 ("compressed-tensors", compressed.go: Kimi-K2-Thinking
// and Kimi-K2.5's routed experts). Parse picks the scheme;
// the loader (model.Loader.Linear) asks it for each linear weight.
//
// It imports engine/model, engine/tensor and engine/jsonerr only.
package quant
