package capture

import (
	"fmt"

	"hsdb/engine/model"
)

// partialLoad refuses captures from a tree whose first decoder layer is
// not layer 0 (an engine opened with --load-layers A-B, A > 0): layer A
// then receives the embeddings instead of layer A-1's output, so nothing
// from it on is the model's forward pass, yet a dump would label it as HF
// output_hidden_states. A load from layer 0 computes layers 0..B exactly.
func (c *Capturer) partialLoad() error {
	if first, last := LoadedLayers(c.tree); first > 0 {
		return PartialLoadErr(first, last)
	}
	return nil
}

// PartialLoadErr is the refusal (ErrCapture) of a capture from decoder
// layers first-last (--load-layers first-last, first > 0): layer first
// receives the embeddings instead of layer first-1's output. `hsdb
// capture` says it before the load, the Capturer at a capture's request.
func PartialLoadErr(first, last int) error {
	return fmt.Errorf("%w: only decoder layers %d-%d are loaded (--load-layers %d-%d): layer %d receives the embeddings instead of layer %d's output, so nothing captured would be the model's hidden states; load from layer 0 (--load-layers 0-%d) or the whole model",
		ErrCapture, first, last, first, last, first, first-1, last)
}

// TruncatedLoadErr is the refusal (ErrCapture) of a capture at site, a
// site after the decoder layers (model.norm, lm_head), from a model of
// layers decoder layers loaded only through layer last (--load-layers
// A-last, last < layers-1): the final norm is then applied to layer last's
// output, so what the site computes is not the model's (SpecForge's
// hidden_state would be labelled HF output_hidden_states[layers]).
func TruncatedLoadErr(site string, last, layers int) error {
	return fmt.Errorf("%w: only decoder layers 0-%d of 0-%d are loaded (--load-layers 0-%d): %s follows layer %d's output instead of layer %d's, so what it computes is not the model's; load through the last layer (--load-layers 0-%d) or the whole model",
		ErrCapture, last, layers-1, last, site, last, layers-1, layers-1)
}

// afterLayers reports whether site is visited after the decoder layers
// (the final norm, the head): a site outside every layer that comes after
// a layer's site in visit order.
func (c *Capturer) afterLayers(site string) bool {
	seenLayer := false
	for _, st := range c.tree.Sites {
		if st.Path == site {
			return seenLayer && st.Layer < 0
		}
		seenLayer = seenLayer || st.Layer >= 0
	}
	return false
}

// LoadRangeFits refuses, before a load, a capture plan that a load of
// decoder layers r of a model of layers layers cannot record as the
// model's (`hsdb capture --load-layers`): a range not from layer 0
// (PartialLoadErr), a captured layer outside it, the final norm's output
// (SpecForge's hidden_state) of a range short of the last layer
// (TruncatedLoadErr). The Capturer refuses the same after the load.
func LoadRangeFits(p *Plan, r model.LayerRange, layers int) error {
	if r.First > 0 {
		return PartialLoadErr(r.First, r.Last)
	}
	for _, src := range p.Srcs {
		switch {
		case src.Norm && r.Last < layers-1:
			return TruncatedLoadErr("model.norm", r.Last, layers)
		case !src.Embed && !src.Norm && !r.Contains(src.Layer):
			return fmt.Errorf("%w: layer %d is not loaded (--load-layers %s): its output cannot be captured; load through it (--load-layers 0-%d) or the whole model", ErrCapture, src.Layer, r, max(src.Layer, r.Last))
		}
	}
	return nil
}

// LoadedLayers returns the first and last decoder layer whose output site
// the tree holds (the decoder layers are the depth-2 sites with a layer
// number, as debug.Session.LoadedLayers counts them); -1, -1 for none.
func LoadedLayers(t *model.Tree) (first, last int) {
	first, last = -1, -1
	if t == nil {
		return first, last
	}
	for _, st := range t.Sites {
		if st.Layer < 0 || st.Depth != 2 {
			continue
		}
		if first < 0 || st.Layer < first {
			first = st.Layer
		}
		last = max(last, st.Layer)
	}
	return first, last
}
