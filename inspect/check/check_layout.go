package check

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/quote"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

// Layout is a capture file interpreted as hidden-state captures: which
// tensor holds the token ids, the loss mask, and each captured entry with
// the layer it claims to be.
type Layout struct {
	// Schema names the layout recognised: "hsdb dump (input_ids,
	// hidden_states.{layer})", "speculators (input_ids, hidden_states
	// list, loss_mask)", ...
	Schema   string
	InputIDs *tensor.Tensor // [len] integer token ids, or nil
	// IDsKey is the file's own name of InputIDs: input_ids (hsdb,
	// SpecForge), token_ids (speculators), ids or tokens; "" without one.
	// Messages name the tensor by it (IDsName).
	IDsKey   string
	LossMask *tensor.Tensor // [len], or nil
	// SeqLens are sequence lengths the file itself records (a seq_lens
	// tensor), or nil.
	SeqLens []int
	Entries []Entry
	// Labelled says the layers of Entries come from the file (keys or
	// metadata); otherwise they are -1, or the caller's --layers.
	Labelled bool
	// Keyed says the entries' layers are their keys' numbers
	// (hidden_states.{layer}, layers.30): Entries are sorted by layer, and
	// the order of the layers is the file's metadata's (Order), or none
	// (a safetensors header has none), when --layers is compared as a
	// set. Otherwise the entries are in the file's order (a list, a
	// trainer's [seq, n_ids, hidden]), which a trainer concatenates.
	Keyed bool
	// Order is the order of a Keyed file's layers its metadata records
	// ("layers": "2,0,1", as hsdb writes the capture's --layers), when
	// they are the keys' layers; nil otherwise.
	Order []int
	// LabelsLost says the file's own metadata names its layers but not
	// one per entry (a speculators file cut after it was written): which
	// layer each entry is cannot be told, and no --layers (nor a dump's
	// manifest) is laid over the entries by position.
	LabelsLost bool
	// Problems are structural problems found while interpreting (no
	// hidden states at all, input_ids not integer, ...).
	Problems []string
	// What is the kind an hsdb sequence file's metadata says its layers
	// hold (WhatStream, WhatHidden, WhatResidual), or "".
	What string
}

// Entry is one captured hidden-state tensor of a file: its key path in the
// file ("hidden_states[1]", "hidden_states.30"), the decoder layer it is
// labelled with (-1 when the file does not say), and the tensor.
type Entry struct {
	Key   string
	Layer int
	T     *tensor.Tensor
	// Kind is what a trainer format says the entry is when it is not a
	// decoder layer's output: CandEmbed (speculators id 0) or CandNormed
	// (SpecForge's hidden_state, the final norm's output); "" for layer
	// entries. Entries with a Kind are not counted against --layers.
	Kind string
}

var layerKey = regexp.MustCompile(`^(?:model\.)?(?:hidden_states|layers?|hs|h)[._\[]?(-?\d+)\]?$`)

// InterpretCapture finds the captured entries of a file. It understands
// hsdb's dump layout (input_ids, hidden_states.{layer} [len, hidden],
// loss_mask), the speculators/EAGLE-3 layout (a dict with input_ids, a
// hidden_states list of per-layer tensors, loss_mask), a hidden_states
// tensor [layers, len, hidden] or [len, hidden], keys named by layer
// (layers.30, layer_30, h.30), and a bare list of tensors. Layer labels come
// from keys or a safetensors "layers" metadata entry ("0,1,2"). The result
// always has Entries or a Problem saying why not.
func InterpretCapture(cf *CaptureFile) *Layout {
	return interpretCapture(cf, 0)
}

// interpretCapture is InterpretCapture knowing the model's hidden_size
// (0 when no model or manifest gives one), which decides how a SpecForge
// sample's aux_hidden_state splits into its layers when hidden_state's
// own width disagrees with it (interpretSpecForge).
func interpretCapture(cf *CaptureFile, hidden int) *Layout {
	l := &Layout{}
	root := cf.Root
	if root.Kind == KindList || root.Kind == KindTuple {
		l.Schema = "a bare list of tensors"
		l.addList("top", root)
		return l
	}
	if root.Kind != KindDict {
		l.Problems = append(l.Problems, "the top-level object is not a dict or a list")
		return l
	}
	for _, k := range []string{"input_ids", "ids", "tokens", "token_ids"} {
		if v := root.Get(k); v != nil && v.Kind == KindTensor {
			l.InputIDs, l.IDsKey = v.Tensor, k
			break
		}
	}
	if v := root.Get("loss_mask"); v != nil && v.Kind == KindTensor {
		l.LossMask = v.Tensor
	}
	if v := root.Get("seq_lens"); v != nil && v.Kind == KindTensor {
		if p := seqLensProblem(v.Tensor, l.idsLen(), l.IDsName()); p != "" {
			l.Problems = append(l.Problems, p)
		} else {
			for i := range v.Tensor.Numel() {
				l.SeqLens = append(l.SeqLens, int(v.Tensor.Int(i)))
			}
		}
	}
	if p := idsFormProblem(l.IDsName(), l.InputIDs); p != "" {
		l.Problems = append(l.Problems, p)
	}
	hs := root.Get("hidden_states")
	switch {
	case root.Get("aux_hidden_state") != nil || root.Get("hidden_state") != nil:
		l.interpretSpecForge(root, hidden)
	case hs != nil && hs.Kind == KindTensor && len(hs.Tensor.Shape) == 3 && l.InputIDs != nil:
		l.interpret3D(hs.Tensor, cf.Metadata)
	case hs != nil && (hs.Kind == KindList || hs.Kind == KindTuple):
		l.Schema = "speculators (dict: input_ids, hidden_states list, loss_mask)"
		l.addList("hidden_states", hs)
	case hs != nil && hs.Kind == KindTensor && len(hs.Tensor.Shape) == 3:
		l.Schema = "dict with hidden_states [layers, len, hidden]"
		t := hs.Tensor
		per := t.Numel() / max(t.Shape[0], 1) * t.DType.Size()
		for i := range t.Shape[0] {
			l.Entries = append(l.Entries, Entry{Key: fmt.Sprintf("hidden_states[%d]", i), Layer: -1,
				T: &tensor.Tensor{Shape: append([]int(nil), t.Shape[1:]...), DType: t.DType, Data: t.Data[i*per : (i+1)*per]}})
		}
	case hs != nil && hs.Kind == KindTensor:
		l.Schema = "dict with one hidden_states tensor"
		l.Entries = append(l.Entries, Entry{Key: "hidden_states", Layer: -1, T: hs.Tensor})
	default:
		var keyed []Entry
		for i, k := range root.Keys {
			m := layerKey.FindStringSubmatch(k)
			if m == nil || root.Fields[i].Kind != KindTensor {
				continue
			}
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 0 || n > 1<<20 {
				// "hidden_states.99999999999999999999" was labelled layer
				// 9223372036854775807 (Atoi's value on overflow).
				l.Problems = append(l.Problems, fmt.Sprintf("%s: %s is not a layer index", k, m[1]))
				continue
			}
			keyed = append(keyed, Entry{Key: k, Layer: n, T: root.Fields[i].Tensor})
		}
		sort.SliceStable(keyed, func(i, j int) bool { return keyed[i].Layer < keyed[j].Layer })
		l.Entries = keyed
		l.Labelled = len(keyed) > 0
		l.Schema = "tensors keyed by layer"
		if len(keyed) > 0 && strings.HasPrefix(keyed[0].Key, "hidden_states.") {
			l.Schema = "hsdb dump (input_ids, hidden_states.{layer}, loss_mask)"
		}
		// Keys numbered 0..n-1 may be a saved list's positions, labelled
		// by the metadata's layers in order; but keys that are the same
		// numbers as those layers are the layers themselves (hsdb's
		// hidden_states.{layer}, whatever order the capture listed).
		if l.listIndexKeys() && !l.keysAreLayers(cf.Metadata) && l.labelFromMetadata(cf.Metadata) {
			l.Schema = "hidden_states.0..N-1 list-index keys, layers from __metadata__"
		}
		// The keys are the layers unless metadata relabelled list
		// positions with other numbers.
		l.Keyed = len(keyed) > 0
		for _, e := range l.Entries {
			m := layerKey.FindStringSubmatch(e.Key)
			if n, _ := strconv.Atoi(m[1]); n != e.Layer {
				l.Keyed = false
			}
		}
		if l.Keyed && l.keysAreLayers(cf.Metadata) {
			l.Order, _ = client.ParseLayers(cf.Metadata["layers"])
		} else if p := l.metadataLayersProblem(cf.Metadata); p != "" {
			l.Problems = append(l.Problems, p)
		}
	}
	if !l.Labelled {
		l.labelFromMetadata(cf.Metadata)
	}
	if w, err := capture.ParseWhat(cf.Metadata["what"]); err == nil && cf.Metadata["hsdb"] != "" {
		l.What = w
	}
	if len(l.Entries) == 0 && len(l.Problems) == 0 {
		l.Problems = append(l.Problems, fmt.Sprintf("no hidden states found (keys: %s); expected hidden_states (a list of per-layer tensors) or hidden_states.{layer} tensors", someKeys(root.Keys)))
	}
	switch {
	case l.InputIDs == nil:
		l.Problems = append(l.Problems, "no input_ids: the capture cannot be tied to its tokens")
	case l.InputIDs.Numel() == 0:
		l.Problems = append(l.Problems, fmt.Sprintf("%s is %s: the capture holds no tokens (a trainer would read an empty sequence)", l.IDsName(), tensor.ShapeString(l.InputIDs.Shape)))
	}
	return l
}

// someKeys lists a file's keys for a message: all of up to 12, else the
// first 10 and how many more (a file of 20,000 tensors made one line of
// 150 kB).
func someKeys(keys []string) string {
	if len(keys) <= 12 {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys[:10], ", "), len(keys)-10)
}

// addList appends every tensor item of a list as an entry; nested lists of
// tensors (per-token rows of one layer) are stacked when their shapes agree.
func (l *Layout) addList(name string, v *Value) {
	for i, it := range v.Items {
		key := fmt.Sprintf("%s[%d]", name, i)
		switch it.Kind {
		case KindTensor:
			l.Entries = append(l.Entries, Entry{Key: key, Layer: -1, T: it.Tensor})
		default:
			l.Problems = append(l.Problems, fmt.Sprintf("%s is not a tensor", key))
		}
	}
}

// labelFromMetadata labels entries from a "layers" metadata value "0,1,2"
// (hsdb's decoder layers) and reports whether it did.
func (l *Layout) labelFromMetadata(meta map[string]string) bool {
	s, ok := meta["layers"]
	if !ok {
		return false
	}
	layers, err := client.ParseLayers(s)
	if err != nil || len(layers) != len(l.Entries) {
		return false
	}
	for i := range l.Entries {
		l.Entries[i].Layer = layers[i]
	}
	l.Labelled = true
	return true
}

// metadataLayersProblem says how the metadata's "layers" (the capture's
// layers, in the order captured, as hsdb writes them) contradict the
// layers of a Keyed file's keys, when the metadata has them and they are
// not the keys' (keysAreLayers): other layers, a layer twice, no layers
// at all ("a,b"). "" when the metadata has no "layers" or the file is not
// Keyed (metadata that relabelled list positions was taken).
func (l *Layout) metadataLayersProblem(meta map[string]string) string {
	s, ok := meta["layers"]
	if !ok || !l.Keyed {
		return ""
	}
	keys := make([]int, len(l.Entries))
	for i, e := range l.Entries {
		keys[i] = e.Layer
	}
	p := fmt.Sprintf("__metadata__ layers %s are not the layers of the file's keys (%s)", quote.Clip(s, 80), joinInts(keys))
	if _, err := client.ParseLayers(s); err != nil && len(err.Error()) <= 200 {
		p += ": " + err.Error()
	}
	return p
}

// keysAreLayers reports whether the metadata's "layers" are the entries'
// key numbers in some order.
func (l *Layout) keysAreLayers(meta map[string]string) bool {
	layers, err := client.ParseLayers(meta["layers"])
	if err != nil || len(layers) != len(l.Entries) {
		return false
	}
	keys := make([]int, len(l.Entries))
	for i, e := range l.Entries {
		keys[i] = e.Layer
	}
	return sameSet(keys, layers)
}

// listIndexKeys reports whether the keyed entries are numbered 0..n-1 in
// order: list positions (hidden_states.0, .1, .2 for a saved Python list),
// which are layer numbers only if no metadata says otherwise.
func (l *Layout) listIndexKeys() bool {
	for i, e := range l.Entries {
		if e.Layer != i {
			return false
		}
	}
	return len(l.Entries) > 0
}

// IDsName is the name of the token ids' tensor in the file (IDsKey), or
// "input_ids" when it has none (the name hsdb and SpecForge write).
func (l *Layout) IDsName() string {
	if l.IDsKey == "" {
		return "input_ids"
	}
	return l.IDsKey
}

// idsLen returns the number of token ids, or -1 without input_ids.
func (l *Layout) idsLen() int {
	if l.InputIDs == nil {
		return -1
	}
	return l.InputIDs.Numel()
}

// ids returns the token ids as int32.
func (l *Layout) ids() []int32 {
	if l.InputIDs == nil {
		return nil
	}
	out := make([]int32, l.InputIDs.Numel())
	for i := range out {
		out[i] = int32(l.InputIDs.Int(i))
	}
	return out
}

// seqLensProblem says what is wrong with a file's seq_lens tensor, or "":
// it must hold integers, each a sequence of at least one token and at most
// n (the length of the ids' tensor, named ids; n < 0 when the file has
// none). A length of 0 or less
// (which a sum check alone lets through: -5 + 17 = 12) or a float that
// would be truncated splits the rows at places the file never meant.
func seqLensProblem(t *tensor.Tensor, n int, ids string) string {
	if t.DType.IsFloat() || t.DType == tensor.Bool {
		return fmt.Sprintf("seq_lens is %s, not an integer dtype", t.DType)
	}
	for i := range t.Numel() {
		v := t.Int(i)
		switch {
		case v < 1:
			return fmt.Sprintf("seq_lens[%d] is %d: a sequence holds at least one token", i, v)
		case n >= 0 && v > int64(n):
			return fmt.Sprintf("seq_lens[%d] is %d, more than the %d tokens of %s", i, v, n, ids)
		}
	}
	return ""
}

// idsFormProblem says what is wrong with the form of a file's token ids
// tensor t called name (the file's own: input_ids, speculators'
// token_ids), or "" (nil t too): its dtype must be an integer one (not a
// float, not bool: seq_lens is held to the same) and its shape one
// sequence, [len] or [len] with unit dimensions around it ([1, len] as a
// tokenizer returns a batch of one). A 0-d tensor is no sequence, and
// [2, 3] is two sequences whose rows the hidden states cannot be told to
// follow (a flattened batch is [sum of lengths] with seq_lens). Such ids
// are never run through the model.
func idsFormProblem(name string, t *tensor.Tensor) string {
	if t == nil {
		return ""
	}
	if t.DType.IsFloat() || t.DType == tensor.Bool {
		return fmt.Sprintf("%s is %s, not an integer dtype", name, t.DType)
	}
	if len(t.Shape) == 0 {
		return name + " is a 0-d tensor [], not a sequence of token ids [len]"
	}
	long := 0
	for _, d := range t.Shape {
		if d > 1 {
			long++
		}
	}
	if long > 1 {
		return fmt.Sprintf("%s is %s, not one sequence [len]: a batch of sequences is stored flattened to [sum of lengths] with seq_lens", name, tensor.ShapeString(t.Shape))
	}
	return ""
}

// idProblems says what is wrong with the token ids, or nil: an id below 0
// or beyond int32 (hsdb's and the engines' token type: such an id would be
// truncated to another token) is never a token; with the model's sizes
// known, an id at or beyond vocab_size is not one of its tokens. It names
// the first offending element and how many there are.
func idProblems(l *Layout, d *model.Dims) []string {
	t := l.InputIDs
	if t == nil || t.DType.IsFloat() || t.DType == tensor.Bool {
		return nil
	}
	vocab := int64(math.MaxInt32) + 1
	what := "not a token id (ids are 0 to 2^31-1)"
	if d != nil && d.Vocab > 0 {
		vocab = int64(d.Vocab)
		what = fmt.Sprintf("outside the model's vocabulary [0, %d)", d.Vocab)
	}
	first, count := -1, 0
	for i := range t.Numel() {
		if v := t.Int(i); v < 0 || v >= vocab {
			if first < 0 {
				first = i
			}
			count++
		}
	}
	if first < 0 {
		return nil
	}
	more := ""
	if count > 1 {
		more = fmt.Sprintf(" (and %d more)", count-1)
	}
	return []string{fmt.Sprintf("%s[%d] = %d is %s%s", l.IDsName(), first, t.Int(first), what, more)}
}
