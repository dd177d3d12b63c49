package quant

import (
	"fmt"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Load returns the stored int4 form of linear weight name
// ("<module>.weight", logical shape [out, in]) as a tensor.QuantInt4Group
// weight, or (nil, nil) when the checkpoint stores the module dense (the
// config ignores it, or it is quantized by the config but saved dense).
// Errors name the tensor: a module two config groups target with
// different weights arguments, packed tensors the config does not
// quantize, a module stored both dense and packed, a missing weight_packed,
// weight_scale or weight_shape, a weight_shape other than [out, in], a
// packed or scale shape that disagrees with weight_shape and the group
// size, a NaN or infinite scale (or one so large that the group
// dequantizes to ±Inf), an asymmetric scheme (with or without
// weight_zero_point), zero points under a symmetric scheme,
// activation-order g_idx.
func (c *Compressed) Load(src model.WeightSource, name string, out, in int) (*tensor.Quantized, error) {
	q, err := c.stored(src, name, out, in, src.Tensor)
	if q == nil || err != nil {
		return nil, err
	}
	if err := checkScales(c.Layout(name).Scale, q.Scale, int4Max, "int4 values reach -8"); err != nil {
		return nil, err
	}
	return q, nil
}

// Check makes Load's checks of weight name that the tensor headers decide
// (which of the module's tensors are present, the config's view of them,
// the dtypes and shapes of weight_packed and weight_scale) and returns the
// error Load would; of the data it reads only weight_shape's two integers,
// after its header says it is an integer [2].
func (c *Compressed) Check(src model.WeightSource, name string, out, in int) error {
	_, err := c.stored(src, name, out, in, headerOnly(src))
	return err
}

// stored returns weight name as Load does but for its scales' values,
// with weight_packed and weight_scale from get (src.Tensor, or
// headerOnly's headers).
func (c *Compressed) stored(src model.WeightSource, name string, out, in int, get fetch) (*tensor.Quantized, error) {
	mod, ok := strings.CutSuffix(name, ".weight")
	if !ok {
		return nil, nil
	}
	g, why := c.group(mod)
	if g != nil {
		if err := c.overlap(mod); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	packed := mod + ".weight_packed"
	_, _, hasPacked := src.Meta(packed)
	if g == nil {
		if hasPacked {
			return nil, fmt.Errorf("%s: the checkpoint stores %s packed but quantization_config does not quantize module %s (%s)", name, packed, mod, why)
		}
		return nil, nil
	}
	_, _, hasDense := src.Meta(name)
	if !hasPacked {
		if hasDense {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: quantization_config (%s) quantizes module %s but the checkpoint has neither %s nor %s", name, g.name, mod, packed, name)
	}
	if hasDense {
		// Two weights for one module (a half-finished conversion, shards
		// of two exports mixed): which one the model is cannot be told.
		return nil, fmt.Errorf("%s: the checkpoint holds module %s both dense (%s) and packed (%s); keep one", name, mod, name, packed)
	}
	if !g.w.Symmetric {
		zp := mod + ".weight_zero_point"
		if _, _, ok := src.Meta(zp); !ok {
			return nil, fmt.Errorf("%s: quantization_config.config_groups.%s.weights.symmetric is false but the checkpoint has no zero points %s", packed, g.name, zp)
		}
		return nil, fmt.Errorf("%s: asymmetric int4 (%s with zero points) is not supported; symmetric is", packed, g.name)
	}
	if zp := mod + ".weight_zero_point"; hasMeta(src, zp) {
		// compressed-tensors writes zero points only for asymmetric
		// schemes (pack_quantized.py compress_weight), and its
		// decompress_weight subtracts any it finds: the config and the
		// tensors disagree, and ignoring them could load another model.
		return nil, fmt.Errorf("%s: quantization_config.config_groups.%s.weights.symmetric is true but the checkpoint holds zero points %s (compressed-tensors writes them only for asymmetric schemes); which one the weights follow cannot be told", packed, g.name, zp)
	}
	if _, _, ok := src.Meta(mod + ".weight_g_idx"); ok {
		return nil, fmt.Errorf("%s: activation-order tensor %s.weight_g_idx is not supported", packed, mod)
	}
	if err := checkWeightShape(src, mod+".weight_shape", out, in); err != nil {
		return nil, err
	}
	gs := *g.w.GroupSize
	pt, err := get(packed)
	if err != nil {
		return nil, err
	}
	words := (in + 7) / 8
	if pt.DType != tensor.I32 || len(pt.Shape) != 2 || pt.Shape[0] != out || pt.Shape[1] != words {
		return nil, fmt.Errorf("%s is %s %s, weight_shape [%d, %d] packs to %s [%d, %d]", packed, pt.DType, tensor.ShapeString(pt.Shape), out, in, tensor.I32, out, words)
	}
	scale := mod + ".weight_scale"
	if _, _, ok := src.Meta(scale); !ok {
		return nil, fmt.Errorf("%s has no scale tensor %s in the checkpoint", packed, scale)
	}
	st, err := get(scale)
	if err != nil {
		return nil, err
	}
	if err := checkScaleDType(tensor.QuantInt4Group, st); err != nil {
		return nil, fmt.Errorf("%s / %s (group_size %d): %w", packed, scale, gs, err)
	}
	q := &tensor.Quantized{Format: tensor.QuantInt4Group, Shape: [2]int{out, in}, Data: pt, Scale: st, Block: [2]int{1, gs}}
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("%s / %s (group_size %d): %w", packed, scale, gs, err)
	}
	return q, nil
}

// hasMeta reports whether the checkpoint holds tensor name.
func hasMeta(src model.WeightSource, name string) bool {
	_, _, ok := src.Meta(name)
	return ok
}

// checkWeightShape checks that tensor n is an integer [2] holding [out, in],
// reading its data (16 bytes at most) only once its header says so.
func checkWeightShape(src model.WeightSource, n string, out, in int) error {
	dt, shape, ok := src.Meta(n)
	if !ok {
		return fmt.Errorf("%s is missing from the checkpoint (want [%d, %d])", n, out, in)
	}
	// The header first: no more than the two integers is read.
	if (dt != tensor.I32 && dt != tensor.I64) || len(shape) != 1 || shape[0] != 2 {
		return fmt.Errorf("%s is %s %s, want i32 [2] = [out, in] = [%d, %d] (or i64 [2])", n, dt, tensor.ShapeString(shape), out, in)
	}
	t, err := src.Tensor(n)
	if err != nil {
		return err
	}
	if o, i := t.Int(0), t.Int(1); o != int64(out) || i != int64(in) {
		return fmt.Errorf("%s is [%d, %d], the config implies [%d, %d]", n, o, i, out, in)
	}
	return nil
}
