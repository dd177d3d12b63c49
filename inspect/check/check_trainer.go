package check

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// This file reads the EAGLE-3 trainers' per-sample files as the trainers
// do (see capture.FormatSpeculators and capture.FormatSpecForge for the
// sources).

// interpret3D reads a 3-D hidden_states beside token ids. speculators
// stores [seq, n_ids, hidden] (vLLM's connector stacks the layers on dim 1;
// training reads hidden_states[:, :-1].flatten(1) and hidden_states[:, -1]);
// an older ExampleHiddenStatesConnector stacked them on dim 0, [n_ids, seq,
// hidden], which speculators' read mixes up. The order is decided from
// len(token_ids) alone: the axis of that length is the sequence axis, and
// when both or neither have it the file is reported, not guessed at.
// Layer labels come from hsdb's metadata (convention speculators,
// layer_ids "2,30,58,61": id 0 is the embeddings, id k decoder layer k-1's
// output); that metadata also settles the order of a sequence as long as
// its number of ids (hsdb's writer stores [seq, n_ids, hidden]).
func (l *Layout) interpret3D(t *tensor.Tensor, meta map[string]string) {
	n := l.idsLen()
	a, b, h := t.Shape[0], t.Shape[1], t.Shape[2]
	shape := tensor.ShapeString(t.Shape)
	hsdbWrote := meta["convention"] == "speculators" && len(strings.Split(meta["layer_ids"], ",")) == b
	switch {
	case a == n && b == n && !hsdbWrote:
		l.Schema = "hidden_states [n, n, hidden] beside token ids"
		l.Problems = append(l.Problems, fmt.Sprintf("hidden_states is %s and len(token_ids) = %d: both leading axes have the sequence's length, so [seq, n_ids, hidden] (speculators) cannot be told from [n_ids, seq, hidden] by shape; not guessed", shape, n))
		return
	case a == n:
		l.Schema = "speculators hidden states (hidden_states [seq, n_ids, hidden], token_ids)"
		rb := h * t.DType.Size()
		for j := range b {
			e := tensor.New(t.DType, a, h)
			for r := range a {
				copy(e.Data[r*rb:(r+1)*rb], t.Data[(r*b+j)*rb:(r*b+j+1)*rb])
			}
			l.Entries = append(l.Entries, Entry{Key: fmt.Sprintf("hidden_states[:, %d]", j), Layer: -1, T: e})
		}
		l.labelSpeculators(meta)
	case b == n:
		l.Schema = "hidden_states [n_ids, seq, hidden] (layers first)"
		per := b * h * t.DType.Size()
		for i := range a {
			l.Entries = append(l.Entries, Entry{Key: fmt.Sprintf("hidden_states[%d]", i), Layer: -1,
				T: &tensor.Tensor{Shape: []int{b, h}, DType: t.DType, Data: t.Data[i*per : (i+1)*per]}})
		}
		l.Problems = append(l.Problems, fmt.Sprintf("hidden_states is %s = [n_ids %d, seq %d, hidden %d], layers first (torch.stack(dim=0), as an older vLLM ExampleHiddenStatesConnector wrote it); speculators reads [seq, n_ids, hidden] (hidden_states[:, :-1].flatten(1)) and would mix tokens and layers: transpose(0, 1) it", shape, a, b, h))
	default:
		l.Schema = "hidden_states [?, ?, hidden] beside token ids"
		l.Problems = append(l.Problems, fmt.Sprintf("hidden_states is %s but len(token_ids) = %d: no axis is the sequence", shape, n))
	}
}

// labelSpeculators labels speculators entries from hsdb's metadata: with
// convention "speculators" and one layer id per entry, id 0 is the
// embeddings and id k the output of decoder layer k-1. Metadata that
// names another number of ids than hidden_states holds (dim 1), or ids
// that are not non-negative integers, is a structure problem: the file
// was cut or relabelled after it was written, and which layer each entry
// is cannot be read from it.
func (l *Layout) labelSpeculators(meta map[string]string) {
	raw, ok := meta["layer_ids"]
	if meta["convention"] != "speculators" || !ok {
		return
	}
	fs := strings.Split(raw, ",")
	if len(fs) != len(l.Entries) {
		l.Problems = append(l.Problems, fmt.Sprintf("metadata layer_ids %q names %d ids but hidden_states holds %d (dim 1): the file was cut or relabelled after it was written, so which layer each entry is cannot be told", raw, len(fs), len(l.Entries)))
		l.LabelsLost = true
		return
	}
	for i, f := range fs {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || id < 0 {
			l.Problems = append(l.Problems, fmt.Sprintf("metadata layer_ids %q: %q is not a layer id (want non-negative integers, one per hidden_states[:, i])", raw, f))
			l.LabelsLost = true
			return
		}
		l.Entries[i].Key = fmt.Sprintf("hidden_states[:, %d] (speculators id %d)", i, id)
		if id == 0 {
			l.Entries[i].Kind = CandEmbed
		} else {
			l.Entries[i].Layer = id - 1
		}
	}
	l.Labelled = true
}

// interpretSpecForge reads SpecForge's offline sample as
// OfflineEagle3Dataset.process_data does: aux_hidden_state.squeeze(0)
// [seq, k·hidden] split into its k layers (SGLang ids, labelled from
// --layers), hidden_state.squeeze(0) [seq, hidden] (the final norm's
// output), input_ids and loss_mask. The layers are hidden_state's width
// wide, or the model's hidden (0: unknown) where hidden_state's differs
// and aux_hidden_state is exactly SpecForge's 3·hidden: the broken tensor
// is then hidden_state, which the shape rule names, not aux_hidden_state
// cut into hidden_state-wide pieces.
func (l *Layout) interpretSpecForge(root *Value, hidden int) {
	l.Schema = "SpecForge offline sample (input_ids, loss_mask, hidden_state = final norm output, aux_hidden_state = k layers concatenated)"
	squeeze := func(key string) *tensor.Tensor {
		v := root.Get(key)
		if v == nil {
			l.Problems = append(l.Problems, fmt.Sprintf("no %s: SpecForge's OfflineEagle3Dataset needs it", key))
			return nil
		}
		if v.Kind != KindTensor {
			l.Problems = append(l.Problems, fmt.Sprintf("%s is not a tensor", key))
			return nil
		}
		t := v.Tensor
		switch {
		case len(t.Shape) == 3 && t.Shape[0] == 1:
			return &tensor.Tensor{Shape: t.Shape[1:], DType: t.DType, Data: t.Data}
		case len(t.Shape) == 2:
			return t
		}
		l.Problems = append(l.Problems, fmt.Sprintf("%s is %s; SpecForge reads %s.squeeze(0) as [seq, width]: want [1, seq, width] or [seq, width]", key, tensor.ShapeString(t.Shape), key))
		return nil
	}
	last, aux := squeeze("hidden_state"), squeeze("aux_hidden_state")
	if root.Get("loss_mask") == nil {
		l.Problems = append(l.Problems, "no loss_mask: SpecForge's OfflineEagle3Dataset needs it")
	}
	if last == nil || aux == nil {
		return
	}
	h, w, n := last.Shape[1], aux.Shape[1], aux.Shape[0]
	if hidden > 0 && h != hidden && w == capture.SpecForgeAux*hidden {
		h = hidden
	}
	if w == 0 || h == 0 {
		l.Problems = append(l.Problems, fmt.Sprintf("aux_hidden_state is %s and hidden_state %s: a width of 0 holds no layer", tensor.ShapeString(aux.Shape), tensor.ShapeString(last.Shape)))
		return
	}
	if w%h != 0 {
		l.Problems = append(l.Problems, fmt.Sprintf("aux_hidden_state has width %d, not a multiple of hidden_state's %d", w, h))
		return
	}
	k := w / h
	if k != 3 {
		// SpecForge's Eagle-3 draft: fc = Linear(3·hidden, hidden), and
		// project_hidden_states asserts size(-1) == hidden_size * 3.
		l.Problems = append(l.Problems, fmt.Sprintf("aux_hidden_state holds %d layers ([1, seq, %d·hidden]); SpecForge's Eagle-3 draft reads 3 (its fc takes 3·hidden: project_hidden_states asserts it)", k, k))
	}
	rb := h * aux.DType.Size()
	for j := range k {
		e := tensor.New(aux.DType, n, h)
		for r := range n {
			copy(e.Data[r*rb:(r+1)*rb], aux.Data[(r*k+j)*rb:(r*k+j+1)*rb])
		}
		l.Entries = append(l.Entries, Entry{Key: fmt.Sprintf("aux_hidden_state[..., %d:%d]", j*h, (j+1)*h), Layer: -1, T: e})
	}
	l.Entries = append(l.Entries, Entry{Key: "hidden_state", Layer: -1, T: last, Kind: CandNormed})
}

// layerEntries returns the indices of the entries that are decoder-layer
// outputs (no Kind): those --layers labels and counts.
func layerEntries(es []Entry) []int {
	var out []int
	for i, e := range es {
		if e.Kind == "" {
			out = append(out, i)
		}
	}
	return out
}

// speculatorsIDs returns the speculators ids of a file labelled from
// hsdb's speculators metadata (labelSpeculators: id 0 the embeddings, id k
// decoder layer k-1's output), in the file's order; false for any other
// file.
func (l *Layout) speculatorsIDs() ([]int, bool) {
	if !l.Labelled || len(l.Entries) == 0 || !strings.Contains(l.Entries[0].Key, "(speculators id ") {
		return nil, false
	}
	ids := make([]int, len(l.Entries))
	for i, e := range l.Entries {
		switch e.Kind {
		case CandEmbed:
			ids[i] = 0
		case "":
			ids[i] = e.Layer + 1
		default:
			return nil, false
		}
	}
	return ids, true
}
