package plan

import (
	"fmt"
	"strings"

	"hsdb/engine/model"
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
// is. Without a scheme or a checkpoint (config.json alone, a partial
// download) there is nothing to check.
func checkStored(t *model.Tree, o Options) error {
	if o.Quant == nil || o.Src == nil {
		return nil
	}
	tied := t.TiedHead()
	for _, p := range t.Params() {
		if !p.Linear || len(p.Shape) != 2 || !o.Stage.Holds(strings.TrimSuffix(p.Name, ".weight"), tied) {
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
