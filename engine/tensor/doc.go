// Package tensor holds hsdb's host-side data types: element dtypes with
// their safetensors and PyTorch names and sizes, exact conversions between
// float32 and bf16 (round to nearest even), f16 (github.com/x448/float16)
// and float8_e4m3fn, dense row-major host tensors ([rows, cols] views,
// zero-copy float32/uint16 views of aligned data), and the one-pass
// Moments every statistic hsdb prints is derived from.
//
// It imports nothing of hsdb: every other package builds on it.
package tensor
