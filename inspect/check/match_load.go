package check

import (
	"errors"
	"fmt"

	"hsdb/inspect/capture"
)

// ErrNotLoaded is wrapped when the model's loaded layers (--load-layers)
// cannot compute what a capture holds: nothing is compared and the file is
// not judged (check and diff: nothing comparable, exit 2).
var ErrNotLoaded = errors.New("not comparable with this partial load")

// loadedFor refuses a comparison the loaded layers cannot make: a load
// from layer A > 0 (--load-layers A-B) feeds the embeddings to layer A, so
// no layer's output is the model's; a load from 0 computes layers 0..B
// exactly, and an entry labelled past B has nothing to be compared with
// (reporting it as departing would blame the capture for hsdb's load).
func loadedFor(e *capture.Target, targets []*target) error {
	first, last := capture.LoadedLayers(e.Tree)
	if first < 0 || (first == 0 && last == e.Dims.Layers-1) {
		return nil
	}
	if first > 0 {
		return fmt.Errorf("%w: the model loads only decoder layers %d-%d (--load-layers %d-%d): layer %d receives the embeddings instead of layer %d's output, so no layer's output is the model's; compare with a load from layer 0 (--load-layers 0-%d) or the whole model", ErrNotLoaded, first, last, first, last, first, first-1, last)
	}
	for _, t := range targets {
		if t.kind == CandNormed && last < e.Dims.Layers-1 {
			return fmt.Errorf("%w: %s is by its format model.norm's output, the final norm of layer %d's output, but the model loads only decoder layers 0-%d (--load-layers 0-%d), where model.norm normalizes layer %d's: load the whole model (or --load-layers 0-%d)", ErrNotLoaded, t.key, e.Dims.Layers-1, last, last, last, e.Dims.Layers-1)
		}
		if t.label > last {
			return fmt.Errorf("%w: %s is labelled layer %d, but the model loads only decoder layers 0-%d (--load-layers 0-%d): load the capture's layers (--load-layers 0-%d or the whole model)", ErrNotLoaded, t.key, t.label, last, last, t.label)
		}
	}
	return nil
}

// normLayer is the decoder layer whose output model.norm normalizes in
// e's forward pass: the last loaded layer (the model's last unless
// --load-layers stops short of it).
func normLayer(e *capture.Target) int {
	if _, last := capture.LoadedLayers(e.Tree); last >= 0 {
		return last
	}
	return e.Dims.Layers - 1
}
