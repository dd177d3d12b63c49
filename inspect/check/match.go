package check

import (
	"fmt"

	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// MatchOptions tunes Match.
type MatchOptions struct {
	// TP is the world size the capture ran at, for shard candidates; 0
	// takes hidden_size / width.
	TP int
	// SeqLens are the lengths of the sequences the file holds (flattened
	// in order); nil runs input_ids as one sequence and splits it where the
	// capture stops matching (a flattened batch).
	SeqLens []int
	// What is the kind the labels claim (CandStream when "").
	What string
	// Tol overrides the dtype's default tolerance (ToleranceFor) when
	// CosMin > 0.
	Tol Tolerance
	// OneSeq says the file declares one sequence (a seq_lens tensor or
	// --seq-lens of one length): a restart found inside it is a chunk
	// boundary without context, not a second sequence.
	OneSeq bool
	// BOS is the model's bos_token_id when HasBOS: a restart at a BOS is a
	// new sequence, elsewhere a chunk boundary; and rows are realigned
	// with BOS added or removed.
	BOS    int32
	HasBOS bool
	// Constants are config floats a fitted scale factor is named by
	// (routed_scaling_factor, ...; ConfigConstants).
	Constants map[string]float64
}

// MatchResult is what Match found: per entry what it is, and how the ids
// split into sequences and chunks.
type MatchResult struct {
	Entries []EntryMatch
	// Runs are the lengths the ids were finally run as (sequences and
	// chunks, in order).
	Runs []int
	// SeqLens are the sequences found (chunks of one sequence merged);
	// one element for one sequence.
	SeqLens []int
	// Chunks are the token positions where a sequence restarted without
	// the context of its earlier tokens (a chunked prefill whose later
	// chunk ran without the earlier chunk's KV cache).
	Chunks []int
	// Ambiguous says sequence boundaries were found where neither a BOS,
	// a repeated first token nor the file's metadata tells a new sequence
	// from a chunk restart: read as sequences.
	Ambiguous bool
}

// EntryMatch is what one captured entry really is: the best match over
// the embeddings and layers × {hidden_states, residual, stream, normed
// stream} × {full, rank shard} (and any site tensor when the width fits
// none of those), and how close the entry is to what its label claims.
type EntryMatch struct {
	Key string // entry key; "hidden_states[0]..hidden_states[18] (stacked)" for per-token entries
	// Stacked is the number of per-token entries stacked into this one
	// (0 for a 2-D entry).
	Stacked int
	// Label is the layer the file claims (-1 unknown).
	Label int
	// Kind is what a trainer format claims instead of a layer's output
	// (Entry.Kind: CandEmbed, CandNormed), or "".
	Kind string
	Rows int
	// Width is the entry's row width (columns compared).
	Width int
	// Claimed is the candidate the label names (Label's What, full width);
	// HasClaimed is false when the label is unknown or no such candidate
	// has the entry's shape.
	Claimed      Candidate
	HasClaimed   bool
	ClaimedScore Score
	Best         Candidate
	BestScore    Score
	// Close says the claimed candidate is within Tol (false without one).
	Close bool
	Tol   Tolerance
	// FirstBadRow is the first token row where the claimed candidate departs
	// beyond Tol (-1 when none, or without a claimed candidate).
	FirstBadRow int
	// Regathered > 0 says the entry held that many column shards stacked
	// along rows (an all-gather on the wrong dimension) and was compared
	// with them put back side by side.
	Regathered int
	// Condition names what is wrong with the values alone ("all zeros",
	// "every row constant", "saturated ..."), or "": no match is claimed
	// for such an entry.
	Condition string
	// Explanations are the best readings of an entry that is not what it
	// claims (or, unlabelled, not a layer's stream), best first: the best
	// and the runner-up, scored on values (Explanation).
	Explanations []Explanation
}

// String renders one line: "hidden_states[1] labelled layer 1: stream of
// layer 1 (cos 1.000000, max|Δ| 2.4e-07) ok".
func (m EntryMatch) String() string {
	lab := "unlabelled"
	switch {
	case m.Kind != "":
		lab = "by its format the " + m.Kind
	case m.Label >= 0:
		lab = fmt.Sprintf("labelled layer %d", m.Label)
	}
	b := m.best()
	s := fmt.Sprintf("%s %s: best %s (cos %.6f, max|Δ| %.3g)", m.Key, lab, b, b.Score.Cos, b.Score.MaxAbs)
	if m.nothing() {
		s = fmt.Sprintf("%s %s: best: %s", m.Key, lab, m.nothingText())
	}
	if m.Condition != "" {
		s = fmt.Sprintf("%s %s: holds %s", m.Key, lab, m.Condition)
	}
	if m.HasClaimed {
		verdict := "close"
		if !m.Close {
			verdict = "DEPARTS"
			if m.FirstBadRow >= 0 {
				verdict += fmt.Sprintf(" from token %d", m.FirstBadRow)
			}
		}
		s += fmt.Sprintf("; claimed %s: cos %.6f, max|Δ| %.3g, %s", m.Claimed, m.ClaimedScore.Cos, m.ClaimedScore.MaxAbs, verdict)
	}
	return s
}

// Match runs hsdb's forward pass (e.Prefill) on the layout's input_ids and names what
// each captured entry really is (EntryMatch). Entries are compared as
// [rows, width] with rows = len(input_ids); 1-D entries, one per token,
// are stacked into one [tokens, width] target first. Without SeqLens the
// ids run as one sequence and, where every captured row up to some token
// matches and the rows after it stop matching, the batch is split there
// and run again (positions restart at a sequence boundary): the returned
// lengths are the sequences found (one element when the file is one
// sequence). The target's sequences are replaced (Match runs prefills).
// Errors: ErrLongerThanContext (a sequence to run longer than
// max_position_embeddings: nothing runs), the forward pass's (a token id
// outside the vocabulary, a device failure) or a site tensor missing on a
// rank.
func Match(e *capture.Target, l *Layout, opts MatchOptions) (*MatchResult, error) {
	ids := l.ids()
	targets := buildTargets(l, e.Dims.Hidden)
	if len(ids) == 0 || len(targets) == 0 {
		return &MatchResult{}, nil
	}
	if err := loadedFor(e, targets); err != nil {
		return nil, err
	}
	what := opts.What
	if what == "" {
		what = CandStream
	}
	hidden := e.Dims.Hidden
	normFor := map[int]bool{}
	anySite := false
	for _, t := range targets {
		if t.label >= 0 {
			for _, d := range []int{-1, 0, 1} {
				if n := t.label + d; n >= 0 && n < e.Dims.Layers {
					normFor[n] = true
				}
			}
		}
	}
	for _, t := range targets {
		anySite = anySite || t.w != hidden // not a layer output's width: site tensors are the candidates
	}
	if len(normFor) == 0 && e.Dims.Layers <= 64 {
		for n := range e.Dims.Layers {
			normFor[n] = true
		}
	}
	run := func(lens []int) error {
		for _, t := range targets {
			t.accs = nil
		}
		h := &matchHook{layers: e.Dims.Layers, normOf: normLayer(e), hidden: hidden, tp: opts.TP, targets: targets, anySite: anySite,
			normFor: normFor, xhat: map[int]*tensor.Tensor{}}
		var seqs [][]int32
		off := 0
		for _, n := range lens {
			seqs = append(seqs, ids[off:off+n])
			off += n
		}
		if err := e.Prefill(seqs, h); err != nil {
			return err
		}
		return h.err
	}
	tolFor := func(t *target) Tolerance {
		if opts.Tol.CosMin > 0 {
			return opts.Tol
		}
		return ToleranceFor(t.dtype)
	}
	lens := []int{len(ids)}
	if s := opts.SeqLens; len(s) > 0 && sum(s) == len(ids) {
		lens = s
	}
	if err := withinContext(lens, e.Dims.MaxPos, opts.SeqLens != nil, l.IDsName()); err != nil {
		return nil, err
	}
	if err := run(lens); err != nil {
		return nil, err
	}
	if opts.SeqLens == nil || opts.OneSeq {
		for range 64 {
			start := len(ids) - lens[len(lens)-1]
			k := boundary(targets, start, tolFor)
			if k < 0 {
				break
			}
			trial := append(append([]int(nil), lens[:len(lens)-1]...), k-start, len(ids)-k)
			if err := run(trial); err != nil {
				return nil, err
			}
			if !confirmed(targets, k, tolFor) {
				if err := run(lens); err != nil {
					return nil, err
				}
				break
			}
			lens = trial
		}
	}
	if !anySite && !allOK(targets, what, tolFor) {
		// an entry of hidden_size's width is not what it claims: every site
		// tensor of a fitting width becomes a candidate too (a second pass,
		// so that good files cost one)
		anySite = true
		if err := run(lens); err != nil {
			return nil, err
		}
	}
	res := &MatchResult{Runs: lens}
	res.SeqLens, res.Chunks, res.Ambiguous = classifyRuns(ids, lens, opts)
	tols := make([]Tolerance, len(targets))
	for i, t := range targets {
		tols[i] = tolFor(t)
		res.Entries = append(res.Entries, entryMatch(t, what, tols[i]))
	}
	consts := scaleConstants(hidden, opts.Constants)
	plain := make([][]Explanation, len(targets))
	solved := make([]bool, len(targets))
	for i, t := range targets {
		plain[i] = accExplanations(t, tols[i], consts)
		solved[i] = anyCloseExplanation(plain[i]) // realigning cannot do better than a close reading
	}
	extra, err := realign(alignInputs{ids: ids, lens: lens, bos: opts.BOS, hasBOS: opts.HasBOS, normOf: normLayer(e), prefill: e.Prefill},
		targets, res.Entries, tols, consts, solved)
	if err != nil {
		return nil, err
	}
	for i, t := range targets {
		m := &res.Entries[i]
		m.Condition = t.cond
		if t.cond != "" || m.HasClaimed && m.Close {
			continue
		}
		m.Explanations = topExplanations(append(plain[i], extra[i]...), 3)
	}
	return res, nil
}

func anyCloseExplanation(xs []Explanation) bool {
	for _, x := range xs {
		if x.Close {
			return true
		}
	}
	return false
}

// classifyRuns tells the restarts of a split batch apart: a restart at
// the model's BOS (or, without one, at a repeat of the first token) starts
// a new sequence; inside a sequence the file declares, or elsewhere when
// the BOS is known, it is a chunk boundary without context. Other
// restarts are read as sequences, flagged ambiguous.
func classifyRuns(ids []int32, runs []int, opts MatchOptions) (seqs, chunks []int, ambiguous bool) {
	off := 0
	for i, n := range runs {
		if i > 0 {
			newSeq := false
			switch {
			case opts.OneSeq:
			case opts.HasBOS && ids[0] == opts.BOS:
				newSeq = ids[off] == opts.BOS
			default:
				newSeq = true
				ambiguous = ambiguous || ids[off] != ids[0]
			}
			if !newSeq {
				chunks = append(chunks, off)
				seqs[len(seqs)-1] += n
				off += n
				continue
			}
		}
		seqs = append(seqs, n)
		off += n
	}
	return seqs, chunks, ambiguous
}

// buildTargets turns a layout's entries into matching targets: 2-D entries
// whose rows equal len(input_ids) one each, or 1-D entries (one per token)
// stacked into one. An entry of width 0 holds nothing to compare (the
// shape rule names it) and is no target: the hook divides by a target's
// width.
func buildTargets(l *Layout, hidden int) []*target {
	n := l.idsLen()
	var out []*target
	if len(l.Entries) == n && n > 0 && len(l.Entries[0].T.Shape) == 1 {
		w := l.Entries[0].T.Shape[0]
		if w == 0 {
			return nil
		}
		t := &target{key: fmt.Sprintf("%s..%s (stacked)", l.Entries[0].Key, l.Entries[n-1].Key), label: -1,
			stacked: n, dtype: l.Entries[0].T.DType, rows: n, w: w}
		for _, e := range l.Entries {
			if len(e.T.Shape) != 1 || e.T.Shape[0] != w || !e.T.DType.IsFloat() {
				return nil
			}
			t.x = append(t.x, e.T.ToF32()...)
		}
		t.cond = valueCondition(t.x, t.rows, t.w, t.dtype)
		t.skip = t.cond != ""
		return []*target{t}
	}
	for _, e := range l.Entries {
		if len(e.T.Shape) == 2 && e.T.DType.IsFloat() {
			if k := wrongDimGather(e.T.Shape[0], e.T.Shape[1], n, hidden); k > 0 {
				out = append(out, regathered(e, n, k))
				continue
			}
		}
		if len(e.T.Shape) != 2 || e.T.Shape[0] != n || e.T.Shape[1] == 0 || !e.T.DType.IsFloat() {
			continue
		}
		t := &target{key: e.Key, label: e.Layer, kind: e.Kind, dtype: e.T.DType, x: e.T.ToF32(), rows: n, w: e.T.Shape[1]}
		t.cond = valueCondition(t.x, t.rows, t.w, t.dtype)
		t.skip = t.cond != ""
		out = append(out, t)
	}
	return out
}

// best returns the target's best candidate over rows [r0, r1): highest
// cosine, then smallest max |Δ|.
func (t *target) best(r0, r1 int) (*rowAcc, Score) {
	var ba *rowAcc
	var bs Score
	for _, a := range t.accs {
		s := a.score(r0, r1)
		tie := s.Cos > bs.Cos-1e-12 && s.Cos < bs.Cos+1e-12
		if ba == nil || s.Cos > bs.Cos+1e-12 || tie && kindRank(a.cand) < kindRank(ba.cand) ||
			tie && kindRank(a.cand) == kindRank(ba.cand) && s.Rel() < bs.Rel() {
			ba, bs = a, s
		}
	}
	return ba, bs
}

// boundary finds where a flattened batch's next sequence starts: over the
// targets, the smallest row k > start such that the target's best
// candidate (over rows from start) matches every row in [start, k) and not
// row k. -1 when every target matches to the end or from no row at all.
func boundary(targets []*target, start int, tolFor func(*target) Tolerance) int {
	k := -1
	for _, t := range targets {
		a, s := t.best(start, t.rows)
		if a == nil {
			continue
		}
		tol := tolFor(t)
		r := start
		for r < t.rows && a.rowGood(r, tol, s.RefMax) {
			r++
		}
		if r > start && r < t.rows && (k < 0 || r < k) {
			k = r
		}
	}
	return k
}

// confirmed checks, after a split at row k, that some target now matches
// its best candidate at row k.
func confirmed(targets []*target, k int, tolFor func(*target) Tolerance) bool {
	for _, t := range targets {
		a, s := t.best(k, t.rows)
		if a != nil && a.rowGood(k, tolFor(t), s.RefMax) {
			return true
		}
	}
	return false
}

func entryMatch(t *target, what string, tol Tolerance) EntryMatch {
	m := EntryMatch{Key: t.key, Label: t.label, Kind: t.kind, Rows: t.rows, Width: t.w, Tol: tol, FirstBadRow: -1, Stacked: t.stacked, Regathered: t.regather}
	if a, s := t.best(0, t.rows); a != nil {
		m.Best, m.BestScore = a.cand, s
	}
	if t.label < 0 && t.kind == "" {
		return m
	}
	if t.kind != "" {
		what = t.kind
	}
	for _, a := range t.accs {
		c := a.cand
		if c.Kind == what && (c.Layer == t.label || (what == CandNormed && c.Last) || what == CandEmbed) && c.World == 0 {
			m.Claimed, m.HasClaimed = c, true
			m.ClaimedScore = a.score(0, t.rows)
			m.Close = tol.Close(m.ClaimedScore)
			if !m.Close {
				for r := range t.rows {
					if !a.rowGood(r, tol, m.ClaimedScore.RefMax) {
						m.FirstBadRow = r
						break
					}
				}
			}
			break
		}
	}
	return m
}

// allOK reports whether every target is what it claims (or, unlabelled,
// a layer's stream) within its tolerance.
func allOK(targets []*target, what string, tolFor func(*target) Tolerance) bool {
	for _, t := range targets {
		if !entryMatch(t, what, tolFor(t)).ok() || t.cond != "" {
			return false
		}
	}
	return true
}

// regathered puts the k column shards an entry [k·n, w] holds stacked
// along rows back side by side: a target [n, k·w] whose row i is the
// entry's rows i, n+i, … (wrongDimGather).
func regathered(e Entry, n, k int) *target {
	x := e.T.ToF32()
	w := e.T.Shape[1]
	out := make([]float32, n*k*w)
	for j := range k {
		for i := range n {
			copy(out[i*k*w+j*w:i*k*w+(j+1)*w], x[(j*n+i)*w:(j*n+i+1)*w])
		}
	}
	t := &target{key: e.Key + " (its row blocks side by side)", label: e.Layer, dtype: e.T.DType, x: out, rows: n, w: k * w, regather: k}
	t.cond = valueCondition(t.x, t.rows, t.w, t.dtype)
	t.skip = t.cond != ""
	return t
}
