package capture

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"hsdb/inspect/plural"
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

// Eagle3IDs are the EAGLE-3 default ids of each format for L decoder
// layers, all the same positions of the residual stream: speculators'
// [2, L/2, L-3] plus L (launch_vllm.py's default), SGLang's
// [1, L/2-1, L-4] (SpecForge prepare_hidden_states.py: "in sglang ... we
// will add 1 to the layer index"), and hsdb's layers whose outputs those
// are, [1, L/2-1, L-4, L-1].
func Eagle3IDs(f Format, layers int) []int {
	L := layers
	switch f {
	case FormatSpeculators:
		return []int{2, L / 2, L - 3, L}
	case FormatSpecForge:
		return []int{1, L/2 - 1, L - 4}
	}
	return []int{1, L/2 - 1, L - 4, L - 1}
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

// Eagle3AuxNote says when a speculators file's aux layers are not the
// three EAGLE-3's drafts read (their fc takes 3·hidden: speculators'
// hidden_states[:, :-1].flatten(1)); ids are the format's ids in file
// order. "" when they are, and for hsdb's own format and SpecForge's
// (whose files of another count are refused, SpecForgeAuxCount). Callers
// add how to give 4 ids where they are given (hsdb capture's --layers,
// the REPL's captured layers).
func Eagle3AuxNote(f Format, ids []int) string {
	switch f {
	case FormatSpeculators:
		if n := len(ids) - 1; n != 3 {
			return fmt.Sprintf("speculators ids %s: the file holds %s before the last (hidden_states[:, :-1]), EAGLE-3's draft reads 3 (4 ids)", joinInts(ids), plural.N(n, "aux id"))
		}
	}
	return ""
}

// eagle3Reads says what EAGLE-3 reads in format f: why a shallow model's
// --layers should still hold as many ids as Eagle3IDs.
func eagle3Reads(f Format) string {
	switch f {
	case FormatSpeculators:
		return "speculators trains on hidden_states[:, :-1], three aux ids, and hidden_states[:, -1]"
	case FormatSpecForge:
		return "SpecForge's draft reads aux_hidden_state [1, len, 3·hidden]"
	}
	return "EAGLE-3's three aux layers and the last"
}

// Eagle3Shallow says whether format f's EAGLE-3 ids (Eagle3IDs) fit a
// model of L decoder layers: the ids; clash, "" when they fit, else the
// first that does not ("hsdb id 1 comes twice": the model is too shallow
// for EAGLE-3's spread of 1, N/2-1, N-4, N-1); and use, distinct ids of
// f's range to name instead (eagle3Usable).
//
// EAGLE-3's aux layers are decoder layers' outputs, so speculators' id 0
// (the embeddings, hsdb's -1) is no EAGLE-3 id: at L = 3 speculators'
// 2, N/2, N-3 is 2, 1, 0, the positions of hsdb's 1, 0, -1 and SGLang's
// 1, 0, -1, which hsdb and SpecForge refuse (SpecForge's
// HFEagle3TargetModel raises "Layer index -1 out of bounds"); the spread
// has turned over (low 2 > mid 1 > high 0). speculators' launch_vllm.py
// passes its default to vLLM unchecked, which would read the embeddings
// as the deepest aux layer; the three formats now refuse it alike. An
// explicit --layers 0,... still takes id 0.
func Eagle3Shallow(f Format, L int) (ids []int, clash string, use []int) {
	ids = Eagle3IDs(f, L)
	lo, hi := eagle3Range(f, L)
	seen := map[int]bool{}
	for _, id := range ids {
		switch {
		case f == FormatSpeculators && id == 0:
			clash = fmt.Sprintf("speculators id 0 is the embeddings, no decoder layer's output: hsdb id -1, outside 0..%d", L-1)
		case id < lo || id > hi:
			clash = fmt.Sprintf("%s id %d is outside %d..%d", f, id, lo, hi)
		case seen[id]:
			clash = fmt.Sprintf("%s id %d comes twice", f, id)
		}
		if clash != "" {
			return ids, clash, eagle3Usable(f, ids, L)
		}
		seen[id] = true
	}
	return ids, "", ids
}

// eagle3Range is the ids of format f that EAGLE-3 may take on a model of
// L decoder layers: the decoder layers' outputs, 0..L-1 in hsdb's and
// SGLang's ids, 1..L in speculators' (whose id 0, the embeddings, is no
// layer's output).
func eagle3Range(f Format, L int) (lo, hi int) {
	if f == FormatSpeculators {
		return 1, L
	}
	return 0, L - 1
}

// eagle3Usable is what is left of the EAGLE-3 ids when the model is too
// shallow for them: those in EAGLE-3's range of format f (eagle3Range:
// speculators' id 0, the embeddings, left out), each once, then the
// deepest ids of the range not yet taken (for SpecForge, below the last
// layer first) until the list is as long as
// ids (EAGLE-3 reads three aux layers: SpecForge's aux_hidden_state is
// [1, len, 3·hidden], the width its draft's fc takes, and speculators'
// hidden_states[:, :-1] holds three ids before the last), or the range
// is used up; ascending (the last is the deepest, as the trainers
// expect). Always a list PlanLayers accepts for L >= 1.
func eagle3Usable(f Format, ids []int, L int) []int {
	lo, hi := eagle3Range(f, L)
	var out []int
	seen := map[int]bool{}
	for _, id := range ids {
		if id >= lo && id <= hi && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	// SpecForge's ids are aux layers only (the last layer's output goes in
	// as hidden_state, normed): the deepest below the last come first, so
	// that the three are the aux layers the other formats' suggestions
	// hold (hsdb 1,2,3,4 and SpecForge 1,2,3 at L = 5, not 1,3,4); the
	// last layer only when the model has no other.
	top := hi
	if f == FormatSpecForge {
		top = hi - 1
	}
	for id := top; id >= lo && len(out) < len(ids); id-- {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	if len(out) < len(ids) && !seen[hi] {
		out = append(out, hi)
	}
	sort.Ints(out)
	return out
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
