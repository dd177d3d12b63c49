package debug

import (
	"errors"
	"fmt"
)

// LayerSpan is the decoder layers a session's engine loaded: First..Last
// (0-based, inclusive) of the model's Total (num_hidden_layers). Partial
// is true when that is not every layer: the engine was opened with
// --layers A-B (engine.Options.Layers), and its module tree holds only
// these layers, under their own numbers (model.layers.A, ...).
type LayerSpan struct {
	First   int  `json:"first"`
	Last    int  `json:"last"`
	Total   int  `json:"total"`
	Partial bool `json:"partial"`
}

// LoadedLayers returns the decoder layers the module tree holds (First -1
// when it holds none).
func (s *Session) LoadedLayers() LayerSpan {
	sp := LayerSpan{First: -1, Last: -1, Total: s.E.Dims.Layers}
	n := 0
	for _, st := range s.E.Tree.Sites {
		if st.Layer < 0 || st.Depth != 2 {
			continue
		}
		if sp.First < 0 || st.Layer < sp.First {
			sp.First = st.Layer
		}
		sp.Last = max(sp.Last, st.Layer)
		n++
	}
	sp.Partial = n < sp.Total
	return sp
}

// String says what is loaded: "layers 2-3 of 0-3 (--layers 2-3)", or
// "layers 0-3" for all of them.
func (sp LayerSpan) String() string {
	if sp.First < 0 {
		return fmt.Sprintf("no decoder layers of %d", sp.Total)
	}
	if !sp.Partial {
		return fmt.Sprintf("layers 0-%d", sp.Last)
	}
	return fmt.Sprintf("layers %d-%d of 0-%d (--layers %d-%d)", sp.First, sp.Last, sp.Total-1, sp.First, sp.Last)
}

// PartialNote explains what a partial load means for a run ("" for a full
// load): layer First receives the embeddings directly, as layer 0 would,
// so nothing from it on is the full model's forward pass.
func (sp LayerSpan) PartialNote() string {
	if !sp.Partial || sp.First < 0 {
		return ""
	}
	s := fmt.Sprintf("only decoder layers %d-%d of 0-%d are loaded (--layers %d-%d)", sp.First, sp.Last, sp.Total-1, sp.First, sp.Last)
	if sp.First > 0 {
		s += fmt.Sprintf(": the embeddings feed layer %d directly, so its input, the hidden states after it and the logits differ from the full model's", sp.First)
	} else {
		s += ": the final norm and lm_head read layer " + fmt.Sprint(sp.Last) + "'s output, so the logits differ from the full model's"
	}
	return s
}

// noSite adds to an ErrNoSite error which layers are loaded when the
// engine holds only some of them.
func (s *Session) noSite(err error) error {
	if !errors.Is(err, ErrNoSite) {
		return err
	}
	if sp := s.LoadedLayers(); sp.Partial {
		return fmt.Errorf("%w; this session loaded only decoder %s", err, sp)
	}
	return err
}
