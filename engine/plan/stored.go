package plan

import (
	"fmt"
	"slices"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// checkCheckpoint makes, for every parameter of t the plan counts (the
// stage's, o.Stage), the checks of model.Loader and the QuantScheme that
// the checkpoint's headers decide, in the tree's order (the order the
// loader reads them in, so that of several faults the plan names the one
// the load would), and returns the first error, wrapped in model.ErrWeight
// as the loader's is: a plan said a checkpoint fits that its load then
// refused. Per parameter: checkStored (a quantized linear weight's stored
// tensors, a dense linear weight's shape), checkDense (a dense
// parameter's shape and dtype), unquantizable (quantized tensors without
// a quantization_config) and checkHeld (a parameter the checkpoint holds
// in no form at all; onRank names the rank when only some of the world's
// ranks hold it). The headers are read as the loader reads them,
// routed experts fused by transformers 5 included (model.FusedExpertHeaders). Without a
// checkpoint (config.json alone, a partial download) there is nothing to
// check.
func checkCheckpoint(t *model.Tree, o Options, world int) error {
	if o.Src == nil {
		return nil
	}
	src := model.FusedExpertHeaders{WeightSource: o.Src}
	lay := checkpointLayout(src)
	tied := t.TiedHead()
	for _, p := range t.Params() {
		if !o.Stage.Holds(strings.TrimSuffix(p.Name, ".weight"), tied) {
			continue // another pipeline stage's end: the loader skips it
		}
		if err := checkStored(o, src, p); err != nil {
			return err
		}
		if err := checkDense(o, src, p); err != nil {
			return err
		}
		if err := unquantizable(o.Quant, src, p); err != nil {
			return err
		}
		if err := checkHeld(o, src, lay, p); err != nil {
			return onRank(p, world, err)
		}
	}
	return nil
}

// onRank names, in a missing parameter's error, the first rank that holds
// a share of p when not every one of the world's ranks does (a routed
// expert placed on one rank under --ep), as the loader's error names the
// rank whose load found it missing ("rank 1: weight: tensor ... is
// missing"); a parameter every rank holds a share of is every rank's.
func onRank(p model.Param, world int, err error) error {
	first, held := -1, 0
	for r := range world {
		if n, ok := numel(p.RankShape(r)); ok && n > 0 {
			held++
			if first < 0 {
				first = r
			}
		}
	}
	if first < 0 || held == world {
		return err
	}
	return fmt.Errorf("rank %d: %w", first, err)
}

// checkStored makes, for a linear weight p, the checks of its stored
// tensors the loader's QuantScheme.Load makes that the checkpoint's
// headers decide (QuantScheme.Check: a fp8 weight without its
// weight_scale_inv, a scale of the wrong block shape or dtype, a packed
// int4 weight or weight_shape that disagrees with [out, in]). A weight the
// checkpoint holds under none of its names (candidates), in no form the
// scheme stores, is checkHeld's. A linear weight stored dense (not fp8)
// must have the shape the config implies, as the loader's fetch requires
// (checkDenseShape), with a scheme or without. Any other parameter passes.
func checkStored(o Options, src model.WeightSource, p model.Param) error {
	if !p.Linear || len(p.Shape) != 2 {
		return nil
	}
	if err := checkDenseShape(src, p); err != nil {
		return err
	}
	if o.Quant == nil {
		return nil
	}
	name, ok := storedName(o.Quant, src, p.Name)
	if !ok {
		return nil
	}
	if err := o.Quant.Check(src, name, p.Shape[0], p.Shape[1]); err != nil {
		return fmt.Errorf("%w: %w", model.ErrWeight, err)
	}
	return nil
}

// storedName returns the first of weight name's checkpoint names
// (candidates) under which the checkpoint holds it in any form: the
// tensor itself, the tensors qs stores it as (Stored), or its scale
// (Layout: an fp8 weight_scale_inv or int4 weight_scale whose weight is
// gone).
func storedName(qs model.QuantScheme, src model.WeightSource, name string) (string, bool) {
	for _, n := range candidates(name) {
		if _, _, ok := src.Meta(n); ok {
			return n, true
		}
		if qs.Stored(src, n) != nil {
			return n, true
		}
		if _, _, ok := src.Meta(qs.Layout(n).Scale); ok {
			return n, true
		}
	}
	return "", false
}

// checkDenseShape returns the loader's error for linear weight p stored
// dense under its first checkpoint name (candidates) with another shape
// than the config implies: a plan counted [96, 80] while the load refused
// the checkpoint's [96, 40]. nil when the checkpoint holds p under none of
// its names, or holds it fp8 (QuantScheme.Check judges those).
func checkDenseShape(src model.WeightSource, p model.Param) error {
	for _, n := range candidates(p.Name) {
		dt, shape, ok := src.Meta(n)
		if !ok {
			continue
		}
		if dt == tensor.F8E4M3 || slices.Equal(shape, p.Shape) {
			return nil
		}
		return fmt.Errorf("%w: tensor %s has shape %s in the checkpoint, the config implies %s", model.ErrWeight, n, tensor.ShapeString(shape), tensor.ShapeString(p.Shape))
	}
	return nil
}

// checkDense makes, for a parameter p the checkpoint stores unquantized
// (under the first of its names it holds, candidates), the checks of
// model.Loader's fetch that the headers decide: the stored shape is the
// one config.json implies (for the 2-D linear weights checkStored has
// checked it, checkDenseShape), and the dtype a float one. It returns the
// error wrapped in model.ErrWeight and worded as the loader's: the plan
// counted such a weight at the config's shape and said the checkpoint
// fits, while its load refused it (a norm of another width, a config.json
// without the head_dim its weights have, an integer tensor). Weights the
// scheme stores quantized are checkStored's, fp8 tensors unquantizable's
// and the scheme's, and a weight the checkpoint does not hold checkHeld's.
func checkDense(o Options, src model.WeightSource, p model.Param) error {
	for _, n := range candidates(p.Name) {
		dt, shape, ok := src.Meta(n)
		if !ok {
			continue
		}
		if dt == tensor.F8E4M3 || (o.Quant != nil && o.Quant.Stored(src, n) != nil) {
			return nil
		}
		if !(p.Linear && len(p.Shape) == 2) && !slices.Equal(shape, p.Shape) {
			return fmt.Errorf("%w: tensor %s has shape %s in the checkpoint, the config implies %s", model.ErrWeight, n, tensor.ShapeString(shape), tensor.ShapeString(p.Shape))
		}
		if !dt.IsFloat() {
			return fmt.Errorf("%w: tensor %s has dtype %s, a float dtype was expected", model.ErrWeight, n, dt)
		}
		return nil
	}
	return nil
}
