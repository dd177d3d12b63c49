package capture

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Format is the on-disk layout a capture job writes: hsdb's own dump or
// the per-sample files an EAGLE-3 trainer reads.
type Format string

// The formats `hsdb capture --format` writes.
const (
	// FormatHsdb is design.md's dump: manifest.json and
	// seq_NNNNNN.safetensors holding input_ids [len] (I64) and
	// hidden_states.{layer} [len, hidden] per captured decoder layer.
	FormatHsdb Format = "hsdb"
	// FormatSpeculators is vllm-project/speculators' hidden-states file,
	// one per sample: hs_{idx}.safetensors holding hidden_states
	// [len, n_ids, hidden] (the model's dtype) and token_ids [len] (I64),
	// as vLLM's ExampleHiddenStatesConnector saves it and
	// hs_connectors.FileTransfer.get_cached loads it
	// (hs_connectors/src/hs_connectors/transfer.py). Training reads
	// hidden_states[:, :-1].flatten(1) as the auxiliary input and
	// hidden_states[:, -1] as the verifier's last hidden state
	// (src/speculators/train/data.py, ArrowDataset._get_raw_data), to
	// which its EAGLE-3 model applies the verifier's norm itself
	// (src/speculators/models/eagle3/core.py, verifier_norm).
	FormatSpeculators Format = "speculators"
	// FormatSpecForge is sgl-project/SpecForge's offline EAGLE-3 sample:
	// rows_{g}-{g+2000}/data_{idx}.ckpt (data_{idx}.ckpt.gz compressed), a
	// torch.save archive of a dict input_ids [len] (I64), loss_mask [len]
	// (I64), hidden_state [1, len, hidden] (the final norm's output: the
	// target head is the bare lm_head, specforge/modeling/target/target_head.py)
	// and aux_hidden_state [1, len, 3·hidden] (three layers concatenated),
	// as scripts/prepare_hidden_states.py writes it (the leading 1 is its
	// unsqueeze(0)); OfflineEagle3Dataset.process_data reads
	// aux_hidden_state.squeeze(0) and hidden_state.squeeze(0)
	// (specforge/data/preprocessing.py).
	FormatSpecForge Format = "specforge"
)

// SpecForgeGroupSize is how many samples SpecForge puts in one rows_
// directory (prepare_hidden_states.py's file_group_size default).
const SpecForgeGroupSize = 2000

// ErrFormat marks an unknown format, or layer ids or tensors a format's
// convention does not allow (its text says "request": a bad --layers is
// not a bad --format).
var ErrFormat = errors.New("invalid capture request")

// ParseFormat reads --format: hsdb (also ""), speculators or specforge,
// in any case. Error: ErrFormat naming the value and the three it takes.
func ParseFormat(s string) (Format, error) {
	switch Format(strings.ToLower(s)) {
	case "", FormatHsdb:
		return FormatHsdb, nil
	case FormatSpeculators:
		return FormatSpeculators, nil
	case FormatSpecForge:
		return FormatSpecForge, nil
	}
	return "", fmt.Errorf("%w: --format %q: want hsdb, speculators or specforge", ErrFormat, s)
}

// CheckWhat refuses a what (ParseWhat's value) other than the stream for
// a trainer format f: speculators' and SpecForge's files hold the
// residual stream (hidden_states + residual), which their trainers read as
// the layer's output; vLLM's un-summed halves go only into hsdb's own
// dump. `hsdb capture` asks before it loads the model, RunCaptureJob
// again. The error wraps ErrFormat and says what to give instead.
func CheckWhat(f Format, what string) error {
	if f == FormatHsdb || what == WhatStream {
		return nil
	}
	return fmt.Errorf("%w: --what %s: --format %s files hold the residual stream (hidden_states + residual), which their trainer reads as the layer's output; vLLM's un-summed halves go only into hsdb's own dump: drop --what, or give --format hsdb", ErrFormat, what, f)
}

// Source is what one format layer id reads from hsdb's forward pass: the
// output stream (hidden_states + residual) of decoder layer Layer, the
// embeddings (Embed, Layer -1), or the final norm's output (Norm, Layer
// -1).
type Source struct {
	Layer int
	Embed bool
	Norm  bool
}

// Key is the capture key the source is recorded under: hidden_states.{l}
// (AddLayers), or the site key of AddSite.
func (s Source) Key() string {
	switch {
	case s.Embed:
		return EmbedKey
	case s.Norm:
		return NormKey
	}
	return fmt.Sprintf("hidden_states.%d", s.Layer)
}

// Site keys the speculators and SpecForge formats capture besides decoder
// layers: the embeddings (speculators id 0) and the final norm's output
// (SpecForge's hidden_state).
const (
	EmbedKey = "model.embed_tokens:hidden_states"
	NormKey  = "model.norm:hidden_states"
)

// Plan is a format's layer ids resolved against a model of L decoder
// layers: the ids in the format's own convention, what each reads, and
// one line per id saying so in every convention.
type Plan struct {
	Format Format
	IDs    []int    // in the format's convention, in file order
	Srcs   []Source // parallel to IDs; SpecForge adds its hidden_state last
	Lines  []string // the mapping, one line per source
}

// PlanLayers resolves --layers for format f on a model of L decoder layers:
// "eagle3" (or "") takes Eagle3IDs; otherwise ids are parsed by parse (a
// list with ranges) and read in the format's convention:
//   - hsdb: layer i = decoder layer i's output stream, 0 <= i < L
//     (HF output_hidden_states[i+1]);
//   - speculators: id k = the residual stream entering decoder layer k,
//     0 <= k <= L: id 0 the embeddings, id L the last layer's output before
//     the final norm (vLLM's eagle_aux_hidden_state_layer_ids;
//     launch_vllm.py allows [0, num_hidden_layers]);
//   - specforge: SGLang id s = decoder layer s's output stream,
//     0 <= s < L (SGLang captures before layer s+1); the file also holds
//     hidden_state, the final norm's output, which takes no id.
//
// The trainer formats' ids are put in ascending order, the order vLLM and
// SGLang collect aux hidden states in while serving the draft.
//
// Errors (ErrFormat) name the id, the format's range and what the id
// would have meant in hsdb's numbering.
func PlanLayers(f Format, spec string, layers int, parse func(string) ([]int, error)) (*Plan, error) {
	L := layers
	var ids []int
	if s := strings.TrimSpace(spec); s == "" || strings.EqualFold(s, "eagle3") {
		ids = Eagle3IDs(f, L)
		if _, clash, use := Eagle3Shallow(f, L); clash != "" {
			if f == FormatSpecForge && len(use) != SpecForgeAux {
				return nil, fmt.Errorf("%w: --layers eagle3: %d decoder layers (SGLang ids 0..%d) are too few for SpecForge, which reads exactly %d aux layers (aux_hidden_state [1, len, %d·hidden])", ErrFormat, L, L-1, SpecForgeAux, SpecForgeAux)
			}
			return nil, fmt.Errorf("%w: --layers eagle3 is %s ids %s for %d decoder layers, too few layers for EAGLE-3's spread (%s); pass --layers with distinct %s, %d of them where the model has that many (%s), e.g. --layers %s",
				ErrFormat, f, joinInts(ids), L, clash, idRange(f, L), len(ids), eagle3Reads(f), joinInts(use))
		}
		return PlanLayers(f, joinInts(ids), L, parseInts)
	} else {
		var err error
		if ids, err = parse(s); err != nil {
			return nil, fmt.Errorf("%w: --layers: %w", ErrFormat, err)
		}
	}
	if f != FormatHsdb {
		// vLLM and SGLang collect aux hidden states in the decoder loop
		// (`if idx in self.aux_hidden_state_layers`): ascending, whatever
		// the order listed. The files keep that order, the draft's
		// serving order.
		ids = append([]int(nil), ids...)
		sort.Ints(ids)
	}
	p := &Plan{Format: f, IDs: ids}
	seen := map[string]bool{}
	for _, id := range ids {
		var src Source
		switch f {
		case FormatSpeculators:
			if id < 0 || id > L {
				return nil, fmt.Errorf("%w: --layers %d: speculators ids are residual-stream positions 0..%d for %d decoder layers (0 = embeddings, %d = the last layer's output)", ErrFormat, id, L, L, L)
			}
			if id == 0 {
				src = Source{Layer: -1, Embed: true}
			} else {
				src = Source{Layer: id - 1}
			}
		case FormatSpecForge:
			if id < 0 || id >= L {
				return nil, fmt.Errorf("%w: --layers %d: SpecForge (SGLang) ids are decoder layers 0..%d whose output is captured; SGLang id s = speculators id s+1", ErrFormat, id, L-1)
			}
			src = Source{Layer: id}
		default:
			if id < 0 || id >= L {
				return nil, fmt.Errorf("%w: --layers %d: hsdb layers are decoder layers 0..%d", ErrFormat, id, L-1)
			}
			src = Source{Layer: id}
		}
		if seen[src.Key()] {
			return nil, fmt.Errorf("%w: --layers: %s id %d is given twice", ErrFormat, f, id)
		}
		seen[src.Key()] = true
		p.Srcs = append(p.Srcs, src)
		p.Lines = append(p.Lines, mappingLine(f, id, src, L))
	}
	if f == FormatSpecForge {
		if err := SpecForgeAuxCount(ids, L, "--layers with three SGLang ids (--layers eagle3 takes EAGLE-3's)"); err != nil {
			return nil, err
		}
		src := Source{Layer: -1, Norm: true}
		p.Srcs = append(p.Srcs, src)
		p.Lines = append(p.Lines, fmt.Sprintf("specforge hidden_state = model.norm's output (final norm applied) = HF output_hidden_states[%d]", L))
	}
	return p, nil
}

// idRange says which ids format f takes for L decoder layers (the ranges
// PlanLayers enforces).
func idRange(f Format, L int) string {
	switch f {
	case FormatSpeculators:
		return fmt.Sprintf("speculators ids in 0..%d (0 = the embeddings, %d = the last layer's output)", L, L)
	case FormatSpecForge:
		return fmt.Sprintf("SGLang ids in 0..%d (decoder layers whose output is captured)", L-1)
	}
	return fmt.Sprintf("hsdb layers in 0..%d", L-1)
}

// mappingLine says what id of format f is in every convention: "speculators
// id 30 = stream entering layer 30 = hsdb layer 29's output = HF
// output_hidden_states[30]".
func mappingLine(f Format, id int, src Source, L int) string {
	if src.Embed {
		return fmt.Sprintf("%s id %d = stream entering layer 0 = the embeddings (model.embed_tokens) = HF output_hidden_states[0]", f, id)
	}
	l := src.Layer
	hf := fmt.Sprintf("HF output_hidden_states[%d]", l+1)
	if l == L-1 {
		hf = fmt.Sprintf("HF output_hidden_states[%d] before the final norm (HF's entry has it applied)", l+1)
	}
	enter := fmt.Sprintf("stream entering layer %d", l+1)
	if l == L-1 {
		enter = "the last layer's output"
	}
	switch f {
	case FormatSpeculators:
		return fmt.Sprintf("speculators id %d = %s = hsdb layer %d's output = SGLang id %d = %s", id, enter, l, l, hf)
	case FormatSpecForge:
		return fmt.Sprintf("specforge (SGLang) id %d = %s = hsdb layer %d's output = speculators id %d = %s", id, enter, l, l+1, hf)
	}
	return fmt.Sprintf("hsdb layer %d's output = %s = speculators id %d = SGLang id %d = %s", l, enter, l+1, l, hf)
}

// HsdbLayers returns the decoder layers whose output stream the plan
// captures, in order (AddLayers' argument).
func (p *Plan) HsdbLayers() []int {
	var out []int
	for _, s := range p.Srcs {
		if !s.Embed && !s.Norm {
			out = append(out, s.Layer)
		}
	}
	return out
}

// parseInts reads "1,2,3" (the eagle3 default's own ids, possibly
// negative, so that PlanLayers reports them).
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// PlanCaptured makes a plan for format f from what a capturer records (the
// REPL's `capture layers` and `capture site`, then `dump --format`):
// speculators ids are the captured layers + 1, led by id 0 when the
// embeddings (model.embed_tokens hidden_states) are captured; SpecForge
// ids are the captured layers, and the final norm's output (model.norm
// hidden_states) must be captured for its hidden_state. what must be the
// stream. Errors (ErrFormat) say what to capture.
func PlanCaptured(f Format, specs []CaptureSpec, what string, layers int) (*Plan, error) {
	if f == FormatHsdb {
		return nil, nil
	}
	if w, _ := ParseWhat(what); w != WhatStream {
		return nil, fmt.Errorf("%w: %s files hold the residual stream (hidden_states + residual); the layers are captured as %s, vLLM's un-summed half: `capture layers ... --what stream` (the default) and run again, or `dump DIR` without --format writes the %s as it is", ErrFormat, f, what, what)
	}
	var ids []int
	embed, norm := false, false
	for _, s := range specs {
		switch {
		case s.Key == EmbedKey:
			embed = true
		case s.Key == NormKey:
			norm = true
		case s.Layer >= 0:
			ids = append(ids, s.Layer)
		}
	}
	switch f {
	case FormatSpeculators:
		for i := range ids {
			ids[i]++
		}
		if embed {
			ids = append([]int{0}, ids...)
		}
	case FormatSpecForge:
		if !norm {
			return nil, fmt.Errorf("%w: specforge files hold the final norm's output as hidden_state: `capture site model.norm hidden_states` and run again", ErrFormat)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: no layers are captured for %s: `capture layers ...` first", ErrFormat, f)
	}
	if f == FormatSpecForge {
		sorted := append([]int(nil), ids...)
		sort.Ints(sorted)
		if err := SpecForgeAuxCount(sorted, layers, "three captured layers: `capture clear`, `capture layers A,B,C`, `capture site model.norm hidden_states` and run again"); err != nil {
			return nil, err
		}
	}
	return PlanLayers(f, joinInts(ids), layers, parseInts)
}

// Sources says in hsdb's terms what a trainer-format dump's ids hold:
// "hsdb layers 0,1,2", with speculators' id 0 named "the embeddings
// (id 0)" (it is no decoder layer's output) and SpecForge's hidden_state
// "model.norm's output (hidden_state)" beside its aux layers. hsdb's own
// dump: "layers 0,1,2".
func (c CaptureInfo) Sources() string {
	layers := make([]string, len(c.Layers))
	for i, l := range c.Layers {
		layers[i] = strconv.Itoa(l)
	}
	hs := "hsdb layers " + strings.Join(layers, ",")
	switch Format(c.Format) {
	case FormatSpeculators:
		if len(c.FormatIDs) > 0 && c.FormatIDs[0] == 0 {
			if len(c.Layers) == 0 {
				return "the embeddings (id 0)"
			}
			return "the embeddings (id 0) and " + hs
		}
		return hs
	case FormatSpecForge:
		return hs + " (aux_hidden_state) and model.norm's output (hidden_state)"
	}
	return "layers " + strings.Join(layers, ",")
}

// LeftOut names the captures a trainer-format dump (PlanCaptured) does not
// write, by key in specs' order: every site capture except the one the
// format holds (speculators' id 0, EmbedKey; SpecForge's hidden_state,
// NormKey), and for speculators NormKey too (its files hold no final norm
// output). nil for hsdb's own format, which writes them all.
func LeftOut(f Format, specs []CaptureSpec) []string {
	if f == FormatHsdb || f == "" {
		return nil
	}
	var out []string
	for _, s := range specs {
		switch {
		case s.Layer >= 0:
		case f == FormatSpeculators && s.Key == EmbedKey:
		case f == FormatSpecForge && s.Key == NormKey:
		default:
			out = append(out, s.Key)
		}
	}
	return out
}
