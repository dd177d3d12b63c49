package quant

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"hsdb/engine/jsonerr"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// FP8Block is block-scaled fp8, as DeepSeek-V3 and Kimi-K2 ship their
// linear weights (HF FineGrainedFP8Config; DeepSeek-V3 inference/kernel.py
// weight_dequant): `<module>.weight` is float8_e4m3fn [out, in] and
// `<module>.weight_scale_inv` is float32 [ceil(out/Block[0]),
// ceil(in/Block[1])], one scale per block of Block[0] rows × Block[1]
// columns (edge blocks may be partial); the weight is fp8 · scale
// (tensor.QuantFP8Block). Weights the checkpoint stores in a float dtype
// (norms, the router, embeddings, layers left unquantized) load dense.
type FP8Block struct {
	Block [2]int // quantization_config.weight_block_size [rows, cols]
	// Skip lists modules_to_not_convert: modules kept dense.
	Skip []string
}

// fp8Config is config.json's quantization_config for block fp8:
// quant_method "fp8", fmt "e4m3", weight_block_size [rows, cols].
type fp8Config struct {
	QuantMethod string `json:"quant_method"`
	Fmt         string `json:"fmt"`
	// ActivationScheme must be "dynamic" (or absent or null, HF
	// FineGrainedFP8Config's default): vLLM's Fp8Config refuses any other
	// with block-wise weights, and hsdb keeps activations unquantized.
	ActivationScheme *string `json:"activation_scheme"`
	WeightBlockSize  []int   `json:"weight_block_size"`
	// ModulesToNotConvert (HF FineGrainedFP8Config) names modules stored
	// dense.
	ModulesToNotConvert []string `json:"modules_to_not_convert"`
}

// maxSkip bounds modules_to_not_convert (released fp8 configs list a few
// modules, or none).
const maxSkip = 4096

// parseFP8 checks an fp8 quantization_config; errors name the field.
func parseFP8(raw json.RawMessage) (*FP8Block, error) {
	var c fp8Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("quantization_config (fp8): %w", jsonerr.Explain(err))
	}
	if c.Fmt != "" && c.Fmt != "e4m3" {
		return nil, fmt.Errorf("quantization_config: fmt %q is not supported (e4m3 is)", c.Fmt)
	}
	if a := c.ActivationScheme; a != nil && *a != "dynamic" {
		return nil, fmt.Errorf("quantization_config: activation_scheme %q is not supported with block-wise fp8 weights (\"dynamic\" is, as in vLLM's Fp8Config)", *a)
	}
	if len(c.WeightBlockSize) != 2 || c.WeightBlockSize[0] <= 0 || c.WeightBlockSize[1] <= 0 {
		return nil, fmt.Errorf("quantization_config: weight_block_size %v: want two positive sizes [rows, cols] (per-tensor fp8 is not supported)", c.WeightBlockSize)
	}
	if c.WeightBlockSize[0] > tensor.MaxBlock || c.WeightBlockSize[1] > tensor.MaxBlock {
		return nil, fmt.Errorf("quantization_config: weight_block_size %v: each size must be at most %d", c.WeightBlockSize, tensor.MaxBlock)
	}
	// Each entry is a substring tried against every weight's name (as HF's
	// FineGrainedFP8 replacement does): "" would keep every module dense,
	// and a list of millions would cost a plan minutes.
	if len(c.ModulesToNotConvert) > maxSkip {
		return nil, fmt.Errorf("quantization_config: modules_to_not_convert has %d entries, more than the %d hsdb matches (each is tried against every weight)", len(c.ModulesToNotConvert), maxSkip)
	}
	for i, m := range c.ModulesToNotConvert {
		if m == "" {
			return nil, fmt.Errorf("quantization_config: modules_to_not_convert[%d] is empty (it would match every module)", i)
		}
	}
	return &FP8Block{Block: [2]int{c.WeightBlockSize[0], c.WeightBlockSize[1]}, Skip: c.ModulesToNotConvert}, nil
}

// String describes the scheme: "fp8 e4m3, 128×128 blocks".
func (s *FP8Block) String() string {
	return fmt.Sprintf("fp8 e4m3, %d×%d blocks", s.Block[0], s.Block[1])
}

// scaleName is DeepSeek's scale tensor of weight name: "<module>.weight" →
// "<module>.weight_scale_inv".
func scaleName(name string) string { return name + "_scale_inv" }

// Load returns weight name as a tensor.Quantized when the checkpoint stores
// it as fp8, or (nil, nil) when it stores it in another dtype (or not at
// all: the loader then reports it missing). Errors name the tensor: a shape
// other than [out, in], a module modules_to_not_convert keeps dense, a
// missing or misshapen scale, a NaN or infinite scale, or one so large
// that the block dequantizes to ±Inf.
func (s *FP8Block) Load(src model.WeightSource, name string, out, in int) (*tensor.Quantized, error) {
	q, err := s.stored(src, name, out, in, src.Tensor)
	if q == nil || err != nil {
		return nil, err
	}
	if err := checkScales(scaleName(name), q.Scale, fp8Max, "fp8 e4m3 values reach ±448"); err != nil {
		return nil, fmt.Errorf("fp8 weight %s: %w", name, err)
	}
	return q, nil
}

// Check makes Load's checks of weight name that the tensor headers decide
// (its shape, modules_to_not_convert, its scale's presence, dtype and
// shape) without reading any data, and returns the error Load would.
func (s *FP8Block) Check(src model.WeightSource, name string, out, in int) error {
	_, err := s.stored(src, name, out, in, headerOnly(src))
	return err
}

// stored returns weight name as Load does but for its scales' values,
// with its tensors from get (src.Tensor, or headerOnly's headers).
func (s *FP8Block) stored(src model.WeightSource, name string, out, in int, get fetch) (*tensor.Quantized, error) {
	dt, shape, ok := src.Meta(name)
	if !ok || dt != tensor.F8E4M3 {
		return nil, nil
	}
	if !slices.Equal(shape, []int{out, in}) {
		return nil, fmt.Errorf("tensor %s has shape %s in the checkpoint, the config implies %s", name, tensor.ShapeString(shape), tensor.ShapeString([]int{out, in}))
	}
	if !strings.HasSuffix(name, "weight") {
		return nil, fmt.Errorf("fp8 tensor %s is not a weight (only <module>.weight tensors carry block scales)", name)
	}
	if m, ok := s.skippedBy(name); ok {
		// The config keeps the module dense, the checkpoint holds it
		// quantized: vLLM builds it unquantized and cannot take the
		// fp8 bytes and their scale, and which one was meant cannot be
		// told (as a packed int4 module the config ignores).
		return nil, fmt.Errorf("fp8 weight %s: quantization_config.modules_to_not_convert lists %q, which keeps the module dense, but the checkpoint stores it as fp8 with a block scale; keep one", name, m)
	}
	w, err := get(name)
	if err != nil {
		return nil, err
	}
	sn := scaleName(name)
	if _, _, ok := src.Meta(sn); !ok {
		return nil, fmt.Errorf("fp8 weight %s has no scale tensor %s in the checkpoint", name, sn)
	}
	sc, err := get(sn)
	if err != nil {
		return nil, err
	}
	if err := checkScaleDType(tensor.QuantFP8Block, sc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	q := &tensor.Quantized{Format: tensor.QuantFP8Block, Shape: [2]int{out, in}, Data: w, Scale: sc, Block: s.Block}
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return q, nil
}

// Stored returns the weight and its scale when the checkpoint stores name
// as fp8, else nil.
func (s *FP8Block) Stored(src model.WeightSource, name string) []string {
	if dt, _, ok := src.Meta(name); !ok || dt != tensor.F8E4M3 {
		return nil
	}
	return []string{name, scaleName(name)}
}

// Planned returns the bytes of weight name [out, in] in the checkpoint:
// for a quantized one, one byte per element plus a float32 scale per block.
// DeepSeek-V3's release quantizes every linear projection but the LM head
// and the router (mlp.gate), and nothing that is not a linear weight
// (embeddings, norms); modules_to_not_convert adds to the dense ones. A
// dense weight is reported as not quantized (bytes 0: its size depends on
// the stored dtype).
func (s *FP8Block) Planned(name string, out, in int) (int64, bool) {
	if !s.quantizes(name) {
		return 0, false
	}
	br, bc := tensor.CeilDiv(out, s.Block[0]), tensor.CeilDiv(in, s.Block[1])
	return int64(out)*int64(in) + 4*int64(br)*int64(bc), true
}

// Layout returns fp8's format, the config's weight_block_size (the same
// for every weight) and weight name's scale tensor, name + "_scale_inv".
func (s *FP8Block) Layout(name string) model.QuantLayout {
	return model.QuantLayout{Format: tensor.QuantFP8Block, Block: s.Block, Scale: scaleName(name)}
}

func (s *FP8Block) quantizes(name string) bool {
	if !strings.HasSuffix(name, ".weight") || strings.HasSuffix(name, "lm_head.weight") || strings.HasSuffix(name, "embed_tokens.weight") ||
		strings.HasSuffix(name, ".gate.weight") || strings.HasSuffix(name, "norm.weight") {
		return false
	}
	_, skipped := s.skippedBy(name)
	return !skipped
}

// skippedBy returns the modules_to_not_convert entry that keeps weight name
// dense (a substring of the name, as HF's FineGrainedFP8 replacement
// matches it), and whether one does.
func (s *FP8Block) skippedBy(name string) (string, bool) {
	for _, m := range s.Skip {
		if strings.Contains(name, m) {
			return m, true
		}
	}
	return "", false
}
