package arch

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Where a DeepSeek-architecture checkpoint keeps the language model. A plain
// checkpoint names its tensors "model.layers.3..." and "lm_head.weight"; a
// multimodal wrapper (Kimi-K2.5) puts them under "language_model." next to
// its vision tower, and transformers 5 multimodal classes use
// "model.language_model.layers.3...". transformers 5 may also save routed
// experts fused: "mlp.experts.gate_up_proj" [experts, 2·I, hidden] and
// "mlp.experts.down_proj" [experts, hidden, I] instead of DeepSeek's
// per-expert "mlp.experts.{e}.{gate,up,down}_proj.weight".

// lmLayout is where one checkpoint keeps the language model's tensors
// (model.LMLayout: the same list the memory plan reads headers under).
type lmLayout = model.LMLayout

// lmLayouts are the layouts findLayout tries, plain first.
var lmLayouts = model.LMLayouts()

// findLayout returns the layout whose embedding table src holds; the error
// lists the names tried, or the tables found when there are several.
func findLayout(src model.WeightSource, tied bool) (lmLayout, error) {
	var tried, found []string
	for _, lay := range lmLayouts {
		n := lay.Model + ".embed_tokens.weight"
		if _, _, ok := src.Meta(n); ok {
			found = append(found, n)
		}
	}
	if len(found) > 1 {
		// Two language models' tensors side by side (a wrapper saved over a
		// plain checkpoint, two exports mixed): which one config.json
		// describes cannot be told, and the first would be taken silently.
		return lmLayout{}, fmt.Errorf("%w: the checkpoint holds embedding tables under %d prefixes (%s): keep one language model's tensors", model.ErrWeight, len(found), strings.Join(found, ", "))
	}
	for _, lay := range lmLayouts {
		n := lay.Model + ".embed_tokens.weight"
		tried = append(tried, n)
		if _, _, ok := src.Meta(n); !ok {
			continue
		}
		if tied {
			lay.Head = ""
			return lay, nil
		}
		if _, _, ok := src.Meta(lay.Head); ok {
			return lay, nil
		}
		for _, alt := range lmLayouts {
			if _, _, ok := src.Meta(alt.Head); ok {
				lay.Head = alt.Head
				return lay, nil
			}
		}
		return lay, nil // the loader reports the missing head by its expected name
	}
	return lmLayout{}, fmt.Errorf("%w: the checkpoint has no embedding table (tried %s)", model.ErrWeight, strings.Join(tried, ", "))
}

// unusedTensors returns the names src lists (when it can list them) that the
// language model never reads: a wrapper's vision tower and projector, and
// decoder layers past num_hidden_layers (DeepSeek-V3's multi-token
// prediction layer 61).
func unusedTensors(src model.WeightSource, lay lmLayout, layers int) []string {
	lister, ok := src.(interface{ Names() []string })
	if !ok {
		return nil
	}
	var out []string
	layerPrefix := lay.Model + "." + layersName + "."
	for _, n := range lister.Names() {
		switch {
		case n == lay.Head:
		case strings.HasPrefix(n, layerPrefix):
			idx, _, _ := strings.Cut(strings.TrimPrefix(n, layerPrefix), ".")
			if i, err := strconv.Atoi(idx); err == nil && i >= layers {
				out = append(out, n)
			}
		case strings.HasPrefix(n, lay.Model+"."):
		default:
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// fusedExperts presents transformers-5 fused expert tensors under DeepSeek's
// per-expert names (model.FusedExpertHeaders: their headers), so that the
// loader can slice them like the released layout. Tensors it does not
// synthesize come from the underlying source.
type fusedExperts struct {
	model.FusedExpertHeaders
}

// expertPart returns expert e's part of fused tensor t: gate and up are
// halves of gate_up_proj[e] ([2·I, hidden]), down is down_proj[e]
// ([hidden, I]); model.FusedExpertPart's error for a tensor that has none.
func expertPart(t *tensor.Tensor, e int, part string) (*tensor.Tensor, error) {
	if _, err := model.FusedExpertPart(t.Shape, e, part); err != nil {
		return nil, err
	}
	rows, cols := t.Shape[1], t.Shape[2]
	flat := t.Reshape(t.Shape[0]*rows, cols)
	switch part {
	case "gate":
		return flat.SliceRows(e*rows, e*rows+rows/2), nil
	case "up":
		return flat.SliceRows(e*rows+rows/2, (e+1)*rows), nil
	}
	return flat.SliceRows(e*rows, (e+1)*rows), nil
}

// Tensor returns a per-expert tensor, sliced from its fused tensor when the
// checkpoint has no tensor of that name.
func (f fusedExperts) Tensor(name string) (*tensor.Tensor, error) {
	if _, _, ok := f.WeightSource.Meta(name); ok {
		return f.WeightSource.Tensor(name)
	}
	fused, e, part, ok := model.FusedExpertName(name)
	if !ok {
		return f.WeightSource.Tensor(name)
	}
	t, err := f.WeightSource.Tensor(fused)
	if err != nil {
		return nil, err
	}
	if t.DType == tensor.F8E4M3 {
		return nil, fmt.Errorf("%s: fused fp8 expert tensors are not supported (DeepSeek's per-expert fp8 layout is)", fused)
	}
	x, err := expertPart(t, e, part)
	if err != nil {
		return nil, fmt.Errorf("%s (for %s): %w", fused, name, err)
	}
	return x, nil
}
