package model

import "hsdb/engine/tensor"

// QuantScheme tells a Loader how a checkpoint stores its quantized linear
// weights (config.json's quantization_config): DeepSeek-V3's block-scaled
// fp8 (`weight` + `weight_scale_inv`), compressed-tensors' pack-quantized
// int4 (`weight_packed` + `weight_scale` + `weight_shape`). Implementations
// live in engine/quant.
type QuantScheme interface {
	// String describes the scheme for `info model`: "fp8 e4m3, 128×128
	// blocks", "compressed-tensors int4 symmetric, group 32".
	String() string
	// Load returns the stored quantized form of the dense linear weight
	// name ("model.layers.3.mlp.experts.7.down_proj.weight") whose logical
	// shape is [out, in], or (nil, nil) when the checkpoint stores that
	// weight dense. An error names the tensor and what was expected (a
	// missing scale, a packed shape that disagrees with [out, in]).
	Load(src WeightSource, name string, out, in int) (*tensor.Quantized, error)
	// Check makes Load's checks of weight name [out, in] that the
	// checkpoint's tensor headers decide (which tensors are present, their
	// dtypes and shapes against [out, in] and the config) and returns the
	// error Load would, or nil where Load would succeed or find the weight
	// dense: what `hsdb plan` checks before it says a checkpoint fits. It
	// reads no tensor data beyond a scheme's few-byte shape tensors
	// (compressed-tensors' 2-element weight_shape), so it cannot see what
	// only the data says (a NaN or infinite scale).
	Check(src WeightSource, name string, out, in int) error
	// Stored returns the checkpoint tensor names that hold weight name's
	// data in this scheme (for byte accounting and unused-tensor reports);
	// nil when it is stored dense.
	Stored(src WeightSource, name string) []string
	// Planned returns the bytes weight name of logical shape [out, in]
	// occupies when stored in this scheme (data plus scales), and whether
	// the scheme quantizes it, from the config alone (no weights read):
	// what `hsdb plan` and the loader's memory check count.
	Planned(name string, out, in int) (bytes int64, quantized bool)
	// Layout says how weight name is stored where Planned says the
	// scheme quantizes it: what the memory plan needs beyond Planned's
	// bytes (which shards stay quantized, the scales' stored dtype).
	Layout(name string) QuantLayout
}

// QuantLayout is how a QuantScheme stores one quantized weight.
type QuantLayout struct {
	// Format and Block are the tensor.Quantized format and scale block
	// ([rows, cols]; int4: [1, group_size]): a rank's shard that does not
	// fall on whole blocks (tensor.ShardOnBlocks) is dequantized by the
	// loader (Linear) and planned dense.
	Format tensor.QuantFormat
	Block  [2]int
	// Scale is the checkpoint tensor holding the weight's scales
	// ("<module>.weight_scale_inv", "<module>.weight_scale"), whose stored
	// dtype a device may widen (the CUDA backend keeps int4 scales in
	// bf16 and widens any other float dtype to float32).
	Scale string
}
