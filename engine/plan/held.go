package plan

import (
	"fmt"
	"strings"

	"hsdb/engine/model"
)

// checkHeld returns the loader's error for parameter p when the checkpoint
// holds it in no form the loader reads (src is the checkpoint's headers,
// through model.FusedExpertHeaders): not as the tensor itself under any of its names
// (candidates), nor as the tensors o.Quant stores it in (Stored: an int4
// weight_packed). The plan counted such a weight at the config's shape and
// said the checkpoint fits, while the load refused it at once. The error
// is model.Loader's (model.MissingTensor: "tensor model.norm.weight is
// missing from the checkpoint (expected shape [96])"),
// naming the tensor as the loader asks for it (loaderName, under the
// layout lay the checkpoint keeps its language model in); a linear weight
// the scheme quantizes is first asked of the scheme, as Loader.Linear
// asks QuantScheme.Load before the dense tensor (compressed-tensors:
// "quantizes module ... but the checkpoint has neither ..._packed nor
// ...weight"). An fp8 weight_scale_inv left without its weight does not
// hold the weight: the loader finds no fp8 tensor and reports the weight
// missing.
func checkHeld(o Options, src model.WeightSource, lay model.LMLayout, p model.Param) error {
	for _, n := range candidates(p.Name) {
		if _, _, ok := src.Meta(n); ok {
			return nil
		}
		if o.Quant != nil && o.Quant.Stored(src, n) != nil {
			return nil
		}
	}
	if fv, ok := src.(model.FusedExpertHeaders); ok {
		for _, n := range candidates(p.Name) {
			if err := fv.PartErr(n); err != nil {
				return err // a fused tensor that holds no such part: the loader's words
			}
		}
	}
	name := loaderName(p.Name, lay)
	if o.Quant != nil && p.Linear && len(p.Shape) == 2 {
		if err := o.Quant.Check(src, name, p.Shape[0], p.Shape[1]); err != nil {
			return fmt.Errorf("%w: %w", model.ErrWeight, err)
		}
	}
	return model.MissingTensor(name, p.Shape)
}

// checkpointLayout returns the layout (model.LMLayouts) whose embedding
// table src holds, the first such, as the DeepSeek loader finds it; the
// plain layout when it holds none (the loader of every other architecture
// reads the plain names).
func checkpointLayout(src model.WeightSource) model.LMLayout {
	lays := model.LMLayouts()
	for _, lay := range lays {
		if _, _, ok := src.Meta(lay.Model + ".embed_tokens.weight"); ok {
			return lay
		}
	}
	return lays[0]
}

// loaderName returns the checkpoint name the loader asks for parameter
// name (named as in the plain layout) when the checkpoint keeps its
// language model in layout lay: "model.norm.weight" is
// "language_model.model.norm.weight" in Kimi-K2.5's, "lm_head.weight" its
// "language_model.lm_head.weight".
func loaderName(name string, lay model.LMLayout) string {
	plain := model.LMLayouts()[0]
	if rest, ok := strings.CutPrefix(name, plain.Model+"."); ok {
		return lay.Model + "." + rest
	}
	if name == plain.Head && lay.Head != "" {
		return lay.Head
	}
	return name
}
