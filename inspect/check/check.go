package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// RuleResult is one validation rule of design.md applied to one file.
type RuleResult struct {
	Rule   string // "shape", "finite", ...
	Status capture.Status
	Detail string
}

// CheckOptions says what check knows beyond the file.
type CheckOptions struct {
	// Dims are the model's sizes (ConfigDims, or a loaded engine's Dims
	// merged in); nil when no model was given: shapes are then checked
	// against input_ids and each other only.
	Dims *model.Dims
	// ConfigSHA256 is the hex sha256 of the model's config.json bytes
	// (modelpath.ConfigJSON, as a dump's manifest records its model's), ""
	// when unknown: a dump of the same sizes from another config.json is
	// said so.
	ConfigSHA256 string
	// Model, when non-nil, runs hsdb's own forward pass on each file's
	// input_ids for layer matching (Match). It must be the model of Dims.
	Model *capture.Target
	// ModelW8A8 says Model's forward pass runs the fp8 linears on fp8
	// activations (--w8a8): a dump written with the other numerics is
	// said so, since their values differ by fp8's rounding.
	ModelW8A8 bool
	// ModelNotRun, when Model is nil, says why a model that was named
	// (--model) could not run (the load's error), for the report's
	// skipped layer matching; "" when none was named.
	ModelNotRun string
	// Layers are the requested layers (--layers), or nil.
	Layers []int
	// ManifestLayers are the layers a dump's manifest records
	// (capture.layers, in its order) for each of its files, nil outside a
	// dump: the layer-count rule fails a file whose own record of its
	// layers disagrees, and labels a file that records none (SpecForge's
	// samples) by them.
	ManifestLayers []int
	// TP is the tensor-parallel world size the capture ran at (--tp), for
	// shard forensics; 0 tries 2, 4, 8 and 16.
	TP int
	// SeqLens are known lengths of the sequences a file holds (--seq-lens),
	// or nil.
	SeqLens []int
	// SeqLensFrom names where SeqLens come from in the report's words;
	// "" is "--seq-lens" (the dump directory check sets "the dump's
	// manifest").
	SeqLensFrom string
	// DType is the declared dtype of the hidden states (an hsdb manifest's),
	// or tensor.Invalid for any float dtype.
	DType tensor.DType
	// Expected, when non-nil, are the tensors a manifest records per name
	// (hsdb dumps): shape, dtype (safetensors' name) and sha256, each
	// compared with the file's; nil skips the checksum rule.
	Expected map[string]capture.TensorRecord
	// Replicas is the cross-rank check an hsdb manifest recorded (the
	// worst over its captured keys), or nil for files that record none.
	Replicas *capture.ReplicaRecord
	// ReplicasWorst is the capture key Replicas describes, and
	// ReplicasFailed every key whose copies differed, in key order (both
	// empty for files that record none).
	ReplicasWorst  string
	ReplicasFailed []string
	// DumpHidden is the hidden_size an hsdb manifest records (0 for files
	// outside a dump): the shape rule's width when Dims is nil (no
	// --model), said to come from the manifest.
	DumpHidden int
	// DumpLayers is the num_hidden_layers an hsdb manifest records (0 for
	// files outside a dump): the range the layer-count rule names
	// requested layers outside of when Dims is nil (no --model).
	DumpLayers int
	// DumpWorld is the world size an hsdb manifest records (0 for files
	// outside a dump): a dump of one rank has no replicas to compare.
	DumpWorld int
	// What is the kind the layer labels claim: WhatStream ("" too),
	// WhatHidden or WhatResidual (an hsdb manifest's capture.what).
	What string
	// BOS is the model's bos_token_id when HasBOS (ConfigFacts): it tells
	// a new sequence from a chunk restart and lets rows be realigned with
	// BOS added or removed.
	BOS    int32
	HasBOS bool
	// Constants are config floats fitted scale factors are named by
	// (ConfigFacts: routed_scaling_factor, ...).
	Constants map[string]float64
}

// ids is the file's name of its token ids' tensor, "input_ids" when
// unknown (a file that could not be read).
func (r *Report) ids() string {
	if r.idsName == "" {
		return "input_ids"
	}
	return r.idsName
}

// Report is check's verdict on one capture file.
type Report struct {
	Path      string
	Format    string
	Schema    string
	Structure []string
	// Err is set when the file could not be read (check exits 2); the
	// other fields are then empty.
	Err       error
	Rules     []RuleResult
	Diagnoses []Diagnosis
	// Matches are the layer-matching results per entry (with an engine).
	Matches []EntryMatch
	// SeqLens are the sequences the file was found to hold: from
	// --seq-lens, a seq_lens tensor, or found by the forward pass; nil when
	// unknown (one sequence assumed).
	SeqLens []int
	// Chunks are token positions where the forward pass found a sequence
	// restarted without its earlier tokens' context (a chunked prefill).
	Chunks []int

	matchErr  error     // the forward pass of layer matching failed
	declared  bool      // SeqLens come from the file's own seq_lens tensor
	ambiguous bool      // sequence boundaries found without BOS evidence
	hasModel  bool      // a forward pass ran on the file's ids
	idsName   string    // the file's name of its token ids (Layout.IDsName)
	wantModel bool      // a model was given
	noEntries bool      // no hidden-state entry or no input_ids: nothing to compare
	badIDs    bool      // input_ids holds values that are no token: never run through the model
	maskCtx   []spanCtx // the loss_mask's spans in context (a directory judges them together)
	held      []int     // the layers the values hold where --layers alone labelled other ones (valuesHeld)
}

// Failed reports whether any rule failed or the file was unreadable.
func (r *Report) Failed() bool {
	if r.Err != nil {
		return true
	}
	for _, x := range r.Rules {
		if x.Status == capture.Fail {
			return true
		}
	}
	return false
}

// Rule returns the result of the named rule.
func (r *Report) Rule(name string) (RuleResult, bool) {
	for _, x := range r.Rules {
		if x.Rule == name {
			return x, true
		}
	}
	return RuleResult{}, false
}

// Lines renders the report as plain text: the structure, each rule as
// pass/FAIL/skip, the layer matches and the diagnoses.
func (r *Report) Lines() []string {
	out := []string{r.Path + ":"}
	if r.Err != nil {
		return append(out, "  cannot read: "+r.errText())
	}
	out = append(out, "  format: "+r.Format, "  layout: "+r.Schema)
	for _, s := range r.Structure {
		out = append(out, "    "+s)
	}
	for _, x := range r.Rules {
		line := fmt.Sprintf("  %-4s  %-*s", x.Status, capture.RuleWidth, x.Rule)
		if x.Detail != "" {
			line += "  " + x.Detail
		}
		out = append(out, strings.TrimRight(line, " "))
	}
	if len(r.Matches) > 0 {
		out = append(out, "  layer matching (hsdb forward pass on "+r.ids()+"):")
		for _, m := range r.Matches {
			out = append(out, "    "+m.String())
		}
	}
	for _, d := range r.Diagnoses {
		out = append(out, "  diagnosis: "+d.Sentence)
		if d.Cause != "" {
			out = append(out, "    most likely cause: "+d.Cause)
		}
	}
	return append(out, "  verdict: "+r.Verdict().String())
}

// CheckFile reads one capture file and applies every validation rule of
// design.md, with shape forensics in the model's terms and, with
// opts.Model, layer matching against hsdb's forward pass. It never
// returns nil: an unreadable file gives a Report whose Err is set (wrapping
// ErrUnreadable or ErrForbiddenGlobal).
func CheckFile(path string, opts CheckOptions) *Report {
	r := &Report{Path: path}
	cf, err := ReadCaptureFile(path)
	if err != nil {
		r.Err = err
		return r
	}
	r.Format = cf.Format
	r.Structure = cf.Structure()
	if len(cf.PickleGlobals) > 0 {
		r.Structure = append(r.Structure, "pickle globals: "+strings.Join(cf.PickleGlobals, ", "))
	}
	hidden := hiddenOf(opts.Dims)
	if hidden == 0 {
		hidden = opts.DumpHidden
	}
	l := interpretCapture(cf, hidden)
	r.Schema, r.idsName = l.Schema, l.IDsName()
	if opts.What == "" {
		opts.What = l.What
	}
	checkLayout(r, l, opts)
	if rs := routerEntries(cf); len(rs) > 0 && opts.Model != nil && l.InputIDs != nil && r.matchErr == nil && !r.badIDs {
		lens := r.SeqLens
		if sum(lens) != l.idsLen() {
			lens = []int{l.idsLen()}
		}
		rule, d := routerRule(opts.Model, l.ids(), lens, rs)
		r.Rules = append(r.Rules, rule)
		if d != nil {
			r.Diagnoses = append(r.Diagnoses, *d)
		}
	}
	if opts.Expected != nil {
		r.Rules = append(r.Rules, checksumRule(cf, opts.Expected))
	}
	return r
}

// checksumRule compares the sha256 of every tensor of a safetensors file
// with what a manifest recorded.
func checksumRule(cf *CaptureFile, want map[string]capture.TensorRecord) RuleResult {
	res := RuleResult{Rule: capture.RuleChecksums}
	var bad []string
	seen := map[string]bool{}
	for i, k := range cf.Root.Keys {
		v := cf.Root.Fields[i]
		if v.Kind != KindTensor {
			continue
		}
		seen[k] = true
		w, ok := want[k]
		if !ok {
			bad = append(bad, k+" is not in the manifest")
			continue
		}
		// The digest covers the bytes alone: a shape or dtype the manifest
		// records differently would pass it.
		if got := v.Tensor.DType.SafetensorsName(); !slices.Equal(v.Tensor.Shape, w.Shape) || got != w.DType {
			bad = append(bad, fmt.Sprintf("%s is %s %s in the file, the manifest records %s %s", k, tensor.ShapeString(v.Tensor.Shape), got, tensor.ShapeString(w.Shape), w.DType))
		}
		if got := sha256Hex(v.Tensor.Data); got != w.SHA256 {
			bad = append(bad, fmt.Sprintf("%s has sha256 %.12s…, the manifest records %.12s…", k, got, w.SHA256))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !seen[k] {
			bad = append(bad, k+" is missing")
		}
	}
	if len(bad) > 0 {
		res.Status, res.Detail = capture.Fail, strings.Join(bad, "; ")
		return res
	}
	res.Status, res.Detail = capture.Pass, fmt.Sprintf("%d tensor%s with the shape, dtype and sha256 the manifest records", len(want), plural(len(want)))
	return res
}

// checkLayout runs the rules on an interpreted file.
func checkLayout(r *Report, l *Layout, opts CheckOptions) {
	// Unlabelled entries take a dump's manifest's layers, the record of
	// what the capture wrote in which position, else --layers.
	by := opts.Layers
	if opts.ManifestLayers != nil {
		by = opts.ManifestLayers
	}
	idx := layerEntries(l.Entries)
	fromFlag := false // labelled from --layers alone: nothing else says which layers the file holds
	if !l.Labelled && !l.LabelsLost && len(by) == len(idx) {
		for i, j := range idx {
			l.Entries[j].Layer = by[i]
		}
		fromFlag = opts.ManifestLayers == nil && len(idx) > 0
	}
	// Ids that are no token: reported by the structure rule, never run
	// through the model (an id past int32 would become another token).
	idProbs := idProblems(l, opts.Dims)
	l.Problems = append(l.Problems, idProbs...)
	r.badIDs = len(idProbs) > 0 || idsFormProblem(l.IDsName(), l.InputIDs) != ""
	r.wantModel = opts.Model != nil
	r.noEntries = len(l.Entries) == 0 || l.InputIDs == nil
	r.SeqLens = opts.SeqLens
	if r.SeqLens == nil {
		r.SeqLens = l.SeqLens
		r.declared = len(l.SeqLens) > 0 && sum(l.SeqLens) == l.idsLen()
	}
	if opts.Model != nil && len(l.Entries) > 0 && l.InputIDs != nil && !r.badIDs {
		r.hasModel = true
		mo := MatchOptions{TP: opts.TP, SeqLens: r.SeqLens, What: opts.What, OneSeq: len(r.SeqLens) == 1,
			BOS: opts.BOS, HasBOS: opts.HasBOS, Constants: opts.Constants}
		res, err := Match(opts.Model, l, mo)
		r.matchErr = err
		if res != nil {
			r.Matches = res.Entries
			r.Chunks = res.Chunks
			if r.SeqLens == nil && len(res.SeqLens) > 1 {
				r.SeqLens, r.ambiguous = res.SeqLens, res.Ambiguous
			}
		}
		if fromFlag && err == nil && res != nil {
			r.held = valuesHeld(res.Entries, len(idx))
		}
	}
	r.Rules = rulesFor(r, l, opts)
	values, valueDs := valuesRule(l)
	mask, maskD, ctxs := lossMaskRule(l)
	r.maskCtx = ctxs
	r.Rules = insertRules(r.Rules, capture.RuleFinite, values, mask)
	seqLens := r.SeqLens
	if r.declared {
		seqLens = nil // the file says how to split its rows: nothing to explain
	}
	f := &shapeFacts{entries: l.Entries, idsLen: l.idsLen(), seqLens: seqLens, hidden: hiddenOf(opts.Dims),
		layers: len(opts.Layers), tp: opts.TP, named: map[string]int{}, model: opts.Model != nil, matches: r.Matches}
	if opts.Dims != nil {
		f.named = opts.Dims.Named
	}
	if d := diagnoseShapes(f); d != nil {
		r.Diagnoses = append(r.Diagnoses, *d)
	}
	r.Diagnoses = append(r.Diagnoses, finiteDiagnoses(l)...)
	r.Diagnoses = append(r.Diagnoses, valueDs...)
	if maskD != nil {
		r.Diagnoses = append(r.Diagnoses, *maskD)
	}
	if d := chunkDiagnosis(r); d != nil {
		r.Diagnoses = append(r.Diagnoses, *d)
	}
	if r.held != nil {
		r.Diagnoses = append(r.Diagnoses, heldDiagnosis(r.Matches, r.held, opts.Layers))
		r.Diagnoses = append(r.Diagnoses, mergeDiagnoses(matchDiagnoses(nonLayerMatches(r.Matches)))...)
	} else {
		r.Diagnoses = append(r.Diagnoses, mergeDiagnoses(matchDiagnoses(r.Matches))...)
	}
	if d := moeDiagnosis(r.Matches, opts.Dims); d != nil {
		r.Diagnoses = append(r.Diagnoses, *d)
	}
}

// insertRules puts rs right after the rule named after (at the end when
// it is missing).
func insertRules(rules []RuleResult, after string, rs ...RuleResult) []RuleResult {
	for i, x := range rules {
		if x.Rule == after {
			out := append(append(append([]RuleResult(nil), rules[:i+1]...), rs...), rules[i+1:]...)
			return out
		}
	}
	return append(rules, rs...)
}

// mergeDiagnoses joins consecutive diagnoses with the same cause into one
// (three layers that are all rank shards read as one finding).
func mergeDiagnoses(ds []Diagnosis) []Diagnosis {
	var out []Diagnosis
	for _, d := range ds {
		if n := len(out); n > 0 && d.Cause != "" && out[n-1].Cause == d.Cause {
			out[n-1].Sentence += "; " + d.Sentence
			continue
		}
		out = append(out, d)
	}
	return out
}

// errText is r.Err without the file's path in front when the reader's
// error starts with it: the report's lines name the file already.
func (r *Report) errText() string {
	return strings.TrimPrefix(r.Err.Error(), r.Path+": ")
}
