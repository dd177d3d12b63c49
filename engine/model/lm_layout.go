package model

import (
	"slices"
	"strings"
)

// LMLayout is where one checkpoint keeps a language model's tensors: the
// prefix its decoder's tensors are named under (Model: "model" in a plain
// checkpoint, "model.layers.3..."), and its LM head's tensor name (Head;
// "" when the head is tied to the embeddings).
type LMLayout struct {
	Model string
	Head  string
}

// lmLayouts are the layouts a checkpoint may keep the language model in:
// plain ("model.layers.3...", "lm_head.weight"), a multimodal wrapper's
// (Kimi-K2.5: "language_model.model.layers.3..." beside its vision tower,
// "language_model.lm_head.weight"), transformers 5 multimodal classes'
// ("model.language_model.layers.3...") and the decoder saved directly
// under "language_model." ("language_model.layers.3...").
var lmLayouts = []LMLayout{
	{"model", "lm_head.weight"},
	{"language_model.model", "language_model.lm_head.weight"},
	{"model.language_model", "lm_head.weight"},
	{"language_model", "lm_head.weight"},
}

// LMLayouts returns the layouts a checkpoint may keep the language model
// in, plain first: the one list the loader (engine/arch, which finds the
// layout a checkpoint uses by its embedding table) and the memory plan
// (engine/plan, which reads stored dtypes and quantized headers under
// CheckpointNames) both take.
func LMLayouts() []LMLayout { return slices.Clone(lmLayouts) }

// CheckpointNames returns the names a language-model parameter named as
// in the plain layout ("model.layers.3.mlp.down_proj.weight",
// "lm_head.weight") may be stored under, one per LMLayout in its order
// without repeats: the plain name first. A name outside both ("model."
// prefix, the LM head) has only itself.
func CheckpointNames(name string) []string {
	out := []string{name}
	for _, lay := range lmLayouts[1:] {
		var n string
		switch rest, ok := strings.CutPrefix(name, lmLayouts[0].Model+"."); {
		case ok:
			n = lay.Model + "." + rest
		case name == lmLayouts[0].Head:
			n = lay.Head
		default:
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// PlainName returns the plain layout's name of a tensor name stored under
// any LMLayout ("language_model.layers.3.x" → "model.layers.3.x",
// "language_model.lm_head.weight" → "lm_head.weight"): the longest layout
// prefix it starts with decides ("language_model.model." before
// "language_model."); a name under none is its own. The loader finds a
// checkpoint's tensors by it, and engine/quant matches compressed-tensors'
// ignore and targets entries under it.
func PlainName(name string) string {
	best := -1
	for i, lay := range lmLayouts {
		if strings.HasPrefix(name, lay.Model+".") && (best < 0 || len(lay.Model) > len(lmLayouts[best].Model)) {
			best = i
		}
	}
	for _, lay := range lmLayouts {
		if name == lay.Head {
			return lmLayouts[0].Head
		}
	}
	if best < 0 {
		return name
	}
	return lmLayouts[0].Model + "." + strings.TrimPrefix(name, lmLayouts[best].Model+".")
}
