package check

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// rulesFor applies design.md's validation rules to an interpreted file.
func rulesFor(r *Report, l *Layout, opts CheckOptions) []RuleResult {
	var out []RuleResult
	add := func(rule string, st capture.Status, format string, a ...any) {
		out = append(out, RuleResult{Rule: rule, Status: st, Detail: fmt.Sprintf(format, a...)})
	}
	// structure
	if len(l.Problems) > 0 {
		add(capture.RuleStructure, capture.Fail, "%s", strings.Join(l.Problems, "; "))
	} else {
		add(capture.RuleStructure, capture.Pass, "%s %s %s, %d hidden-state entr%s", l.IDsName(), tensor.ShapeString(l.InputIDs.Shape), l.InputIDs.DType, len(l.Entries), ies(len(l.Entries)))
	}
	// layer count and labels
	var layered []Entry
	for _, i := range layerEntries(l.Entries) {
		layered = append(layered, l.Entries[i])
	}
	labels := entryLabels(layered)
	// --layers given as the file's own speculators ids (as capture
	// --format speculators takes them) is named: check takes hsdb layers.
	// A speculators file's labels are hsdb layers, its own ids one more:
	// both are said where the labels are (a pass, or no --layers).
	formatIDs, asIDs, noLayersIDs := "", "", ""
	if ids, ok := l.speculatorsIDs(); ok && joinInts(ids) != joinInts(labels) {
		// Id 0 is the embeddings, no hsdb layer: "labelled 0,1,2: hsdb
		// layers = speculators ids 0,1,2,3" matched 3 labels to 4 ids.
		var layerIDs []int
		emb := ""
		for _, id := range ids {
			if id == 0 {
				emb = "; speculators id 0 is the embeddings, no hsdb layer"
				continue
			}
			layerIDs = append(layerIDs, id)
		}
		asIDs, noLayersIDs = " (hsdb layers = speculators ids "+joinInts(layerIDs)+emb+")", ": hsdb layers = speculators ids "+joinInts(layerIDs)+emb
		// The layers' ids alone (id 0, the embeddings, left out) are
		// the same mistake: --layers 2,30,58,61 of a file of ids
		// 0,2,30,58,61.
		if req := joinInts(opts.Layers); req == joinInts(ids) || (emb != "" && req == joinInts(layerIDs)) {
			formatIDs = fmt.Sprintf("; %s are this file's speculators ids (id k = hsdb layer k-1's output, id 0 the embeddings), and --layers (check, diff) are hsdb layers: --layers %s", req, joinInts(labels))
		}
	}
	if d := opts.Dims; formatIDs == "" {
		if d == nil && opts.DumpLayers > 0 {
			d = &model.Dims{Layers: opts.DumpLayers} // the manifest's model, without --model
		}
		formatIDs = outOfModel(opts.Layers, d)
	}
	if lc := layerCountRule(l, layered, opts, formatIDs, asIDs, noLayersIDs); r.held != nil && lc.Status == capture.Pass {
		out = append(out, heldRule(r.Matches, r.held, opts.Layers))
	} else {
		out = append(out, lc)
	}
	// shape
	hidden, from := hiddenOf(opts.Dims), "hidden_size"
	if hidden == 0 && opts.DumpHidden > 0 {
		hidden, from = opts.DumpHidden, "the manifest's hidden_size"
	}
	n := l.idsLen()
	var bad []string
	for _, e := range l.Entries {
		s := e.T.Shape
		switch {
		case len(s) != 2:
			bad = append(bad, fmt.Sprintf("%s is %s, not 2-D", e.Key, tensor.ShapeString(s)))
		case s[1] == 0:
			bad = append(bad, fmt.Sprintf("%s is %s: a hidden state of width 0 holds no values", e.Key, tensor.ShapeString(s)))
		case n >= 0 && s[0] != n:
			bad = append(bad, fmt.Sprintf("%s has %d rows, len(%s) = %d", e.Key, s[0], l.IDsName(), n))
		case hidden > 0 && s[1] != hidden:
			bad = append(bad, fmt.Sprintf("%s has width %d, %s = %d", e.Key, s[1], from, hidden))
		case hidden == 0 && s[1] != l.Entries[0].T.Shape[len(l.Entries[0].T.Shape)-1]:
			bad = append(bad, fmt.Sprintf("%s has width %d, %s %d", e.Key, s[1], l.Entries[0].Key, l.Entries[0].T.Shape[len(l.Entries[0].T.Shape)-1]))
		}
	}
	switch {
	case len(l.Entries) == 0:
		add(capture.RuleShape, capture.Skip, "no entries")
	case len(bad) > 0:
		more := ""
		if len(bad) > 3 {
			more = fmt.Sprintf(" (and %d more)", len(bad)-3)
			bad = bad[:3]
		}
		add(capture.RuleShape, capture.Fail, "%s%s", strings.Join(bad, "; "), more)
	case hidden == 0:
		add(capture.RuleShape, capture.Pass, "every entry %s (hidden_size unknown: give --model)", tensor.ShapeString(l.Entries[0].T.Shape))
	case n < 0:
		add(capture.RuleShape, capture.Pass, "every entry [rows, %d] (width %s; rows not checked without input_ids)", hidden, from)
	default:
		add(capture.RuleShape, capture.Pass, "every entry [%d, %d] = [len(%s), %s]", n, hidden, l.IDsName(), from)
	}
	// one sequence
	switch {
	case len(l.Entries) == 0: // a file's seq_lens alone flattens nothing
		add(capture.RuleOneSeq, capture.Skip, "no entries")
	case len(opts.SeqLens) == 1 && opts.SeqLensFrom != "" && n >= 0 && opts.SeqLens[0] != n:
		add(capture.RuleOneSeq, capture.Fail, "%s records length %d for this file, but %s holds %d tokens", opts.SeqLensFrom, opts.SeqLens[0], l.IDsName(), n)
	case len(opts.SeqLens) > 0 && n >= 0 && sum(opts.SeqLens) != n:
		add(capture.RuleOneSeq, capture.Fail, "%s %s sum to %d, but %s holds %d tokens", seqLensFrom(opts), joinInts(opts.SeqLens), sum(opts.SeqLens), l.IDsName(), n)
	case len(opts.SeqLens) == 0 && len(l.SeqLens) > 0 && n >= 0 && sum(l.SeqLens) != n:
		add(capture.RuleOneSeq, capture.Fail, "the file's seq_lens %s sum to %d, but %s holds %d tokens", joinInts(l.SeqLens), sum(l.SeqLens), l.IDsName(), n)
	case len(r.Chunks) > 0:
		add(capture.RuleOneSeq, capture.Fail, "chunk boundar%s without context at token %s: the rows from there match the ids run as a fresh sequence", ies(len(r.Chunks)), joinInts(r.Chunks))
	case len(r.SeqLens) > 1 && r.declared:
		add(capture.RuleOneSeq, capture.Pass, "%d sequences flattened, split by the file's own seq_lens tensor: %s tokens", len(r.SeqLens), joinIntsSep(r.SeqLens, " + "))
	case len(r.SeqLens) > 1 && r.ambiguous:
		add(capture.RuleOneSeq, capture.Fail, "%d sequences flattened into one: %s tokens (the rows restart where a new sequence would; without a BOS at the restart the ids cannot tell this from a chunked prefill without context: --seq-lens or the file's seq_lens decides)",
			len(r.SeqLens), joinIntsSep(r.SeqLens, " + "))
	case len(r.SeqLens) > 1:
		add(capture.RuleOneSeq, capture.Fail, "%d sequences flattened into one: %s tokens", len(r.SeqLens), joinIntsSep(r.SeqLens, " + "))
	case len(r.Matches) > 0 && anyClose(r.Matches):
		add(capture.RuleOneSeq, capture.Pass, "the capture matches %s run as one sequence", l.IDsName())
	case len(r.SeqLens) == 1:
		src, how := seqLensFrom(opts), ""
		if len(opts.SeqLens) == 0 {
			src = "the file's seq_lens"
		}
		if !r.hasModel {
			how = " (not matched: no model)"
		}
		add(capture.RuleOneSeq, capture.Pass, "one sequence of %d tokens, as %s says%s", r.SeqLens[0], src, how)
	case r.wantModel && r.badIDs:
		add(capture.RuleOneSeq, capture.Skip, "not checked: %s", notRun(l))
	case r.matchErr != nil:
		// --model was given, but its forward pass could not run on the
		// file (a partial load, ids past the context, a failed pass).
		add(capture.RuleOneSeq, capture.Skip, "not checked: --model's forward pass did not run on this file (the matches-model rule says why); --seq-lens checks it without one")
	case r.hasModel:
		// It ran, and no entry is close to anything it computed.
		add(capture.RuleOneSeq, capture.Skip, "not checked: no entry matches --model's forward pass, which would tell one sequence from a flattened batch (the matches-model rule says what each is closest to); --seq-lens checks it without one")
	default:
		add(capture.RuleOneSeq, capture.Skip, "not checked: give --model (a forward pass finds flattened batches) or --seq-lens")
	}
	// dtype
	out = append(out, dtypeRule(l, opts.DType))
	// finite
	var nonFinite []string
	for _, e := range l.Entries {
		if !e.T.DType.IsFloat() {
			continue
		}
		m := tensor.MomentsF32(e.T.ToF32())
		if m.NaN+m.Inf > 0 {
			nonFinite = append(nonFinite, fmt.Sprintf("%s: %d NaN, %d Inf", e.Key, m.NaN, m.Inf))
		}
	}
	if len(nonFinite) > 0 {
		add(capture.RuleFinite, capture.Fail, "%s", strings.Join(nonFinite, "; "))
	} else {
		add(capture.RuleFinite, capture.Pass, "no NaN or Inf")
	}
	// layers distinct
	var same []string
	for i := range l.Entries {
		for j := i + 1; j < len(l.Entries); j++ {
			a, b := l.Entries[i].T, l.Entries[j].T
			if a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && bytes.Equal(a.Data, b.Data) {
				same = append(same, l.Entries[i].Key+" = "+l.Entries[j].Key)
			}
		}
	}
	switch {
	case len(l.Entries) < 2:
		add(capture.RuleDistinct, capture.Skip, "fewer than two entries")
	case len(same) > 0:
		add(capture.RuleDistinct, capture.Fail, "identical: %s", strings.Join(same, ", "))
	default:
		add(capture.RuleDistinct, capture.Pass, "%d entr%s pairwise different", len(l.Entries), ies(len(l.Entries)))
	}
	// replicas
	if rr := opts.Replicas; rr == nil && opts.DumpWorld == 1 {
		add(capture.RuleReplicas, capture.Skip, "the dump ran on one rank (tp 1): no replicas to compare")
	} else if rr == nil {
		add(capture.RuleReplicas, capture.Skip, "the file records no cross-rank check (an hsdb dump keeps it in its manifest.json, read when the dump's directory is checked)")
	} else if rr.OK {
		add(capture.RuleReplicas, capture.Pass, "%d ranks agree (max relative difference %.3g)", rr.Ranks, rr.MaxRelDiff)
	} else {
		add(capture.RuleReplicas, capture.Fail, "%s%s at capture%s", replicaKey(opts.ReplicasWorst), rr.Describe(), alsoFailed(opts.ReplicasFailed, opts.ReplicasWorst))
	}
	// checksums are applied by the dump checker, which has the raw tensors
	// matches model
	if errors.Is(r.matchErr, ErrNotLoaded) || errors.Is(r.matchErr, ErrLongerThanContext) {
		add(capture.RuleMatch, capture.Skip, "%v", r.matchErr)
	} else if r.matchErr != nil {
		add(capture.RuleMatch, capture.Fail, "the forward pass failed: %v", r.matchErr)
	} else if r.wantModel && r.badIDs {
		add(capture.RuleMatch, capture.Skip, "%s", notRun(l))
	} else {
		out = append(out, matchRule(r.Matches, opts, l.IDsName()))
	}
	return out
}

// dtypeRule checks the dtypes: every hidden-state entry a float dtype,
// all the same and as the manifest declares; the token ids an integer
// dtype; loss_mask one 0/1 per token. Without entries (the structure rule
// says why) it skips.
func dtypeRule(l *Layout, declared tensor.DType) RuleResult {
	res := RuleResult{Rule: capture.RuleDType}
	var problems []string
	var dt tensor.DType
	for i, e := range l.Entries {
		if !e.T.DType.IsFloat() {
			problems = append(problems, fmt.Sprintf("%s is %s, not a float dtype", e.Key, e.T.DType))
			continue
		}
		if i == 0 {
			dt = e.T.DType
		} else if e.T.DType != dt {
			problems = append(problems, fmt.Sprintf("%s is %s, %s is %s", e.Key, e.T.DType, l.Entries[0].Key, dt))
		}
	}
	if ids := l.InputIDs; ids != nil && (ids.DType.IsFloat() || ids.DType == tensor.Bool) {
		problems = append(problems, fmt.Sprintf("%s is %s, not an integer dtype", l.IDsName(), ids.DType))
	}
	if declared != tensor.Invalid && dt != tensor.Invalid && dt != declared {
		problems = append(problems, fmt.Sprintf("hidden states are %s, the manifest declares %s", dt, declared))
	}
	if m := l.LossMask; m != nil {
		if m.Numel() != l.idsLen() {
			problems = append(problems, fmt.Sprintf("loss_mask has %d elements, %s %d", m.Numel(), l.IDsName(), l.idsLen()))
		}
		for i := range m.Numel() {
			if v := m.At(i); v != 0 && v != 1 {
				problems = append(problems, fmt.Sprintf("loss_mask[%d] = %g, not 0 or 1", i, v))
				break
			}
		}
	}
	if len(problems) > 0 {
		res.Status, res.Detail = capture.Fail, strings.Join(problems, "; ")
		return res
	}
	res.Status = capture.Pass
	res.Detail = fmt.Sprintf("hidden states %s", dt)
	if len(l.Entries) == 0 { // the structure rule says why there are none
		res.Status, res.Detail = capture.Skip, "no hidden-state entries"
	}
	if l.InputIDs != nil {
		res.Detail += ", " + l.IDsName() + " " + l.InputIDs.DType.String()
	}
	if l.LossMask != nil {
		res.Detail += ", loss_mask " + l.LossMask.DType.String() + " of 0/1"
	}
	return res
}

func matchRule(ms []EntryMatch, opts CheckOptions, ids string) RuleResult {
	res := RuleResult{Rule: capture.RuleMatch}
	if opts.Model == nil {
		res.Status, res.Detail = capture.Skip, "no --model loaded: layer matching needs hsdb's own forward pass"
		if opts.ModelNotRun != "" {
			res.Detail = "--model could not run (" + opts.ModelNotRun + "): layer matching needs hsdb's own forward pass"
		}
		return res
	}
	if len(ms) == 0 {
		res.Status, res.Detail = capture.Skip, "nothing to match: no "+ids+", or no entry whose rows align with them"
		return res
	}
	var bad, ok []string
	for _, m := range ms {
		verb := "matches"
		if !m.best().Close && !m.nothing() { // nothing: "matches nothing: ..."
			verb = "is closest to"
		}
		switch {
		case m.Condition != "":
			bad = append(bad, fmt.Sprintf("%s holds %s", m.Key, m.Condition))
		case m.Regathered > 0:
			bad = append(bad, fmt.Sprintf("%s holds %d column shards stacked along rows; side by side it %s %s", m.Key, m.Regathered, verb, m.bestText()))
		case m.HasClaimed && m.Close && m.Kind != "":
			ok = append(ok, fmt.Sprintf("%s cos %.6f", m.Kind, m.ClaimedScore.Cos))
		case m.HasClaimed && m.Close:
			ok = append(ok, fmt.Sprintf("layer %d cos %.6f", m.Label, m.ClaimedScore.Cos))
		case m.HasClaimed && m.Kind != "":
			bad = append(bad, fmt.Sprintf("%s (%s by its format) departs (cos %.6f); it %s %s", m.Key, m.Kind, m.ClaimedScore.Cos, verb, m.bestText()))
		case m.HasClaimed:
			bad = append(bad, fmt.Sprintf("%s (labelled layer %d) departs (cos %.6f); it %s %s", m.Key, m.Label, m.ClaimedScore.Cos, verb, m.bestText()))
		case m.Label >= 0:
			bad = append(bad, fmt.Sprintf("%s (labelled layer %d) cannot be the layer's output: it %s %s", m.Key, m.Label, verb, m.bestText()))
		case m.ok():
			ok = append(ok, fmt.Sprintf("%s = stream of layer %d", m.Key, m.Best.Layer))
		default:
			bad = append(bad, fmt.Sprintf("%s %s %s", m.Key, verb, m.bestText()))
		}
	}
	if len(bad) > 0 {
		res.Status, res.Detail = capture.Fail, strings.Join(bad, "; ")
		return res
	}
	res.Status, res.Detail = capture.Pass, strings.Join(ok, ", ")
	return res
}

func anyClose(ms []EntryMatch) bool {
	for _, m := range ms {
		if m.Tol.Close(m.BestScore) {
			return true
		}
	}
	return false
}

// finiteDiagnoses locates NaN and Inf: per entry, the count and the first
// positions (token, channel).
func finiteDiagnoses(l *Layout) []Diagnosis {
	var out []Diagnosis
	for _, e := range l.Entries {
		if !e.T.DType.IsFloat() {
			continue
		}
		v := e.T.ToF32()
		cols := max(e.T.Cols(), 1)
		var nan, inf int
		var pos []string
		for i, x := range v {
			isNaN, isInf := math.IsNaN(float64(x)), math.IsInf(float64(x), 0)
			if !isNaN && !isInf {
				continue
			}
			if isNaN {
				nan++
			} else {
				inf++
			}
			if len(pos) < 5 {
				pos = append(pos, fmt.Sprintf("(token %d, channel %d)", i/cols, i%cols))
			}
		}
		if nan+inf == 0 {
			continue
		}
		lab := ""
		if e.Layer >= 0 {
			lab = fmt.Sprintf(" (layer %d)", e.Layer)
		}
		out = append(out, Diagnosis{
			Sentence: fmt.Sprintf("%d NaN and %d Inf in %s%s at %s", nan, inf, e.Key, lab, strings.Join(pos, ", ")),
			Cause:    "non-finite values in the capture: an overflow in the model's dtype upstream, uninitialized memory written out, or corruption after the forward pass (compare with --model)",
		})
	}
	return out
}

func entryLabels(es []Entry) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Layer
	}
	return out
}

// countDiff names, for a file holding another number of layer entries
// than --layers requests, the layers its entries are labelled with and
// which requested layers it lacks or which it holds beyond them
// (": labelled 1,2,4; layer 3 missing"); "" when the entries carry no
// layer labels.
func countDiff(labelled bool, labels, want []int) string {
	if !labelled || len(labels) == 0 || slices.Min(labels) < 0 {
		return ""
	}
	var missing, extra []int
	for _, w := range want {
		if !slices.Contains(labels, w) {
			missing = append(missing, w)
		}
	}
	for _, l := range labels {
		if !slices.Contains(want, l) {
			extra = append(extra, l)
		}
	}
	s := ": labelled " + joinInts(labels)
	if len(missing) > 0 {
		s += fmt.Sprintf("; layer%s %s missing", plural(len(missing)), joinInts(missing))
	}
	if len(extra) > 0 {
		s += fmt.Sprintf("; layer%s %s not requested", plural(len(extra)), joinInts(extra))
	}
	return s
}

func labelNote(labels []int) string {
	for _, l := range labels {
		if l < 0 {
			return ", unlabelled"
		}
	}
	if len(labels) == 0 {
		return ""
	}
	return ", labelled " + joinInts(labels)
}

func joinInts(xs []int) string { return joinIntsSep(xs, ",") }

func joinIntsSep(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}

func ies(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// sameSet reports whether a and b hold the same numbers, each as often,
// in any order.
func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[int]int{}
	for _, x := range a {
		n[x]++
	}
	for _, x := range b {
		n[x]--
		if n[x] < 0 {
			return false
		}
	}
	return true
}

// seqLensFrom names where opts.SeqLens come from: --seq-lens unless the
// caller says (a dump's manifest).
func seqLensFrom(opts CheckOptions) string {
	if opts.SeqLensFrom != "" {
		return opts.SeqLensFrom
	}
	return "--seq-lens"
}

// notRun says why --model did not run on a file whose token ids are not
// one sequence of token ids (badIDs): the one-sequence and matches-model
// rules said "give --model" and "no token_ids" while both were given.
func notRun(l *Layout) string {
	return fmt.Sprintf("--model was not run: %s is not one sequence of token ids (the structure rule says why)", l.IDsName())
}
