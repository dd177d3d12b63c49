package check

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/model"
)

// ErrLayersRange marks --layers ids that are no decoder layer of the
// model check and diff compare with: nothing could be labelled by them.
var ErrLayersRange = errors.New("--layers out of range")

// LayersInRange refuses check's and diff's --layers when an id is outside
// 0..L, no layer position of the model in any convention (L = d.Layers,
// config.json's num_hidden_layers), before any file is read: the error
// (ErrLayersRange) names the ids outside hsdb's layers 0..L-1 (layer i =
// decoder layer i's output, HF output_hidden_states[i+1]), the model
// (name, its path), its layer count and the valid range. An id of L alone
// is left to the layer-count rule, which knows the file: in a speculators
// file id L is hsdb layer L-1, and the rule names that (outOfModel). nil
// when d is nil or gives no layer count.
func LayersInRange(ids []int, d *model.Dims, name string) error {
	if d == nil || d.Layers <= 0 {
		return nil
	}
	L := d.Layers
	var out []string
	beyond := false // outside speculators' 0..L too
	for _, id := range ids {
		if id < 0 || id >= L {
			out = append(out, strconv.Itoa(id))
		}
		beyond = beyond || id < 0 || id > L
	}
	if !beyond {
		return nil
	}
	what := "layer " + out[0] + " is"
	if len(out) > 1 {
		what = "layers " + strings.Join(out, ",") + " are"
	}
	if name != "" {
		name += " "
	}
	return fmt.Errorf("%w: %s outside the model: %shas %d decoder layers, and --layers takes hsdb layers 0..%d (layer i = decoder layer i's output = HF output_hidden_states[i+1])",
		ErrLayersRange, what, name, L, L-1)
}

// outOfModel says which requested hsdb layers are outside the model's
// 0..L-1 for the layer-count rule ("; layer 4 is outside the model's hsdb
// layers 0..3 (4 decoder layers)"), "" when none is or the layer count is
// unknown.
func outOfModel(ids []int, d *model.Dims) string {
	if d == nil || d.Layers <= 0 {
		return ""
	}
	var out []string
	for _, id := range ids {
		if id < 0 || id >= d.Layers {
			out = append(out, strconv.Itoa(id))
		}
	}
	switch len(out) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; layer %s is outside the model's hsdb layers 0..%d (%d decoder layers)", out[0], d.Layers-1, d.Layers)
	}
	return fmt.Sprintf("; layers %s are outside the model's hsdb layers 0..%d (%d decoder layers)", strings.Join(out, ","), d.Layers-1, d.Layers)
}
