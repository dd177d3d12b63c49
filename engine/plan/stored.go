package plan

import (
	"fmt"
	"slices"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// checkStored makes, for every linear weight of t the plan counts, the
// checks of its stored tensors the loader's QuantScheme.Load makes that
// the checkpoint's headers decide (QuantScheme.Check: a fp8 weight
// without its weight_scale_inv, a scale of the wrong block shape or dtype,
// a packed int4 weight or weight_shape that disagrees with [out, in]), and
// returns the first error, wrapped in model.ErrWeight as the loader's is:
// a plan said a checkpoint fits that its load then refused. A weight the
// checkpoint holds under none of its names (candidates), in no form the
// scheme stores, is left to the load to report, as a missing dense weight
// is. A linear weight stored dense (not fp8) must have the shape the
// config implies, as the loader's fetch requires (checkDenseShape), with
// a scheme or without. Without a checkpoint (config.json alone, a
// partial download) there is nothing to check.
func checkStored(t *model.Tree, o Options) error {
	if o.Src == nil {
		return nil
	}
	tied := t.TiedHead()
	for _, p := range t.Params() {
		if !p.Linear || len(p.Shape) != 2 || !o.Stage.Holds(strings.TrimSuffix(p.Name, ".weight"), tied) {
			continue
		}
		if err := checkDenseShape(o.Src, p); err != nil {
			return err
		}
		if o.Quant == nil {
			continue
		}
		name, ok := storedName(o, p.Name)
		if !ok {
			continue
		}
		if err := o.Quant.Check(o.Src, name, p.Shape[0], p.Shape[1]); err != nil {
			return fmt.Errorf("%w: %w", model.ErrWeight, err)
		}
	}
	return nil
}

// storedName returns the first of weight name's checkpoint names
// (candidates) under which the checkpoint holds it in any form: the
// tensor itself, the tensors o.Quant stores it as (Stored), or its scale
// (Layout: an fp8 weight_scale_inv or int4 weight_scale whose weight is
// gone).
func storedName(o Options, name string) (string, bool) {
	for _, n := range candidates(name) {
		if _, _, ok := o.Src.Meta(n); ok {
			return n, true
		}
		if o.Quant.Stored(o.Src, n) != nil {
			return n, true
		}
		if _, _, ok := o.Src.Meta(o.Quant.Layout(n).Scale); ok {
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

// checkDense makes, for every parameter of t the plan counts that the
// checkpoint stores unquantized (under the first of its names it holds,
// candidates), the checks of model.Loader's fetch that the headers
// decide: the stored shape is the one config.json implies (for the 2-D
// linear weights checkStored has checked it, checkDenseShape), and the
// dtype a float one. It returns the first error, wrapped in
// model.ErrWeight and worded as the loader's: the plan counted such a
// weight at the config's shape and said the checkpoint fits, while its
// load refused it (a norm of another width, a config.json without the
// head_dim its weights have, an integer tensor). Weights the scheme stores quantized are
// checkStored's, fp8 tensors unquantizable's and the scheme's, and a
// weight the checkpoint does not hold is left to the load to report.
func checkDense(t *model.Tree, o Options) error {
	if o.Src == nil {
		return nil
	}
	tied := t.TiedHead()
	for _, p := range t.Params() {
		if !o.Stage.Holds(strings.TrimSuffix(p.Name, ".weight"), tied) {
			continue
		}
		for _, n := range candidates(p.Name) {
			dt, shape, ok := o.Src.Meta(n)
			if !ok {
				continue
			}
			if dt == tensor.F8E4M3 || (o.Quant != nil && o.Quant.Stored(o.Src, n) != nil) {
				break
			}
			if !(p.Linear && len(p.Shape) == 2) && !slices.Equal(shape, p.Shape) {
				return fmt.Errorf("%w: tensor %s has shape %s in the checkpoint, the config implies %s", model.ErrWeight, n, tensor.ShapeString(shape), tensor.ShapeString(p.Shape))
			}
			if !dt.IsFloat() {
				return fmt.Errorf("%w: tensor %s has dtype %s, a float dtype was expected", model.ErrWeight, n, dt)
			}
			break
		}
	}
	return nil
}
