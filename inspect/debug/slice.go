package debug

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/model"
)

// Range is a half-open interval [Lo, Hi) of rows or columns.
type Range struct {
	Lo int `json:"lo"`
	Hi int `json:"hi"`
}

// Slice selects what part of a site tensor a command looks at: one rank or
// all (-1), the token rows of one sequence of the step's batch or all (-1),
// and within those the token rows Tokens (nil: all; Hi -1: to the end),
// counted from the sequence's first token when Seq is given, else from the
// batch's.
type Slice struct {
	Rank   int
	Seq    int
	Tokens *Range
}

// All is the Slice of every rank and token.
var All = Slice{Rank: -1, Seq: -1}

// ParseRange parses "A:B", "A:" or ":B" (B exclusive) or "A" (one row).
func ParseRange(s string) (Range, error) {
	a, b, colon := strings.Cut(s, ":")
	r := Range{Hi: -1}
	var err error
	if a != "" {
		if r.Lo, err = strconv.Atoi(strings.TrimSpace(a)); err != nil || r.Lo < 0 {
			return r, fmt.Errorf("range %q: %q is not a non-negative integer", s, a)
		}
	}
	switch {
	case !colon:
		r.Hi = r.Lo + 1
	case b != "":
		if r.Hi, err = strconv.Atoi(strings.TrimSpace(b)); err != nil || r.Hi < 0 {
			return r, fmt.Errorf("range %q: %q is not a non-negative integer", s, b)
		}
		if r.Hi <= r.Lo {
			return r, fmt.Errorf("range %q is empty", s)
		}
	}
	return r, nil
}

// LMHeadSite is the path of the site whose tensors have one row per logits
// row of the step (Batch.LogitRows: each sequence's last token unless all
// logits are asked for): vLLM's and HF's lm_head.
const LMHeadSite = "lm_head"

// tokenRows maps the rows of a site tensor with n rows to token indices of
// the step's batch: every token (identity), or, at the lm_head site, one
// row per logits row (Batch.LogitRows). nil: the rows are not per-token
// (a [1, experts] load at a MoE gate, even in a batch of one sequence).
func tokenRows(site *model.Site, b *model.Batch, n int) []int {
	if n == b.Tokens() {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	if lr := b.LogitRows(); site.Path == LMHeadSite && n == len(lr) {
		out := make([]int, n)
		for i, t := range lr {
			out[i] = int(t)
		}
		return out
	}
	return nil
}

// rowRange resolves sl's sequence and tokens to the rows [Lo, Hi) of a
// tensor with n rows at st.
func rowRange(st *stopCtx, n int, sl Slice, name string) (Range, error) {
	if sl.Seq < 0 && sl.Tokens == nil {
		return Range{0, n}, nil
	}
	b := st.ev.Batch
	tok := tokenRows(st.ev.Site, b, n)
	if tok == nil {
		return Range{}, fmt.Errorf("%s has %d rows, not one per token of the batch (%d): --seq and --tokens do not apply", name, n, b.Tokens())
	}
	lo, hi := 0, b.Tokens()
	what := "the batch"
	if sl.Seq >= 0 {
		idx := -1
		for i, q := range b.Seqs {
			if q == sl.Seq {
				idx = i
			}
		}
		if idx < 0 {
			return Range{}, fmt.Errorf("--seq %d: step %d's batch has sequences %v", sl.Seq, b.Step, b.Seqs)
		}
		lo = b.SeqStart(idx)
		hi = lo + b.SeqLens[idx]
		what = fmt.Sprintf("sequence %d", sl.Seq)
	}
	if t := sl.Tokens; t != nil {
		end := t.Hi
		if end < 0 {
			end = hi - lo
		}
		if t.Lo >= hi-lo || end > hi-lo {
			return Range{}, fmt.Errorf("--tokens %d:%d: %s has %d tokens in step %d", t.Lo, end, what, hi-lo, b.Step)
		}
		lo, hi = lo+t.Lo, lo+end
	}
	r := Range{-1, -1}
	for i, t := range tok {
		if t >= lo && t < hi {
			if r.Lo < 0 {
				r.Lo = i
			}
			r.Hi = i + 1
		}
	}
	if r.Lo < 0 {
		return Range{}, fmt.Errorf("%s has no row for tokens %d:%d of the batch (it holds tokens %v)", name, lo, hi, tok)
	}
	return r, nil
}

// IndexSpec is one dimension of a value index: a single position or a
// Python-style slice with optional ends; negative positions count from the
// end.
type IndexSpec struct {
	Lo, Hi       int
	HasLo, HasHi bool
	Single       bool
}

// Index selects values of a [rows, cols] tensor: print hidden_states[3, :8].
type Index struct {
	Rows, Cols IndexSpec
}

// ParseIndex parses the text between brackets: "3, :8", "0:2", "-1".
// A missing column spec means every column.
func ParseIndex(s string) (Index, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return Index{}, fmt.Errorf("index [%s]: site tensors are [rows, cols]: give at most two indices", s)
	}
	var idx Index
	var err error
	if idx.Rows, err = parseSpec(parts[0]); err != nil {
		return idx, fmt.Errorf("index [%s]: %w", s, err)
	}
	idx.Cols = IndexSpec{}
	if len(parts) == 2 {
		if idx.Cols, err = parseSpec(parts[1]); err != nil {
			return idx, fmt.Errorf("index [%s]: %w", s, err)
		}
	}
	return idx, nil
}

func parseSpec(s string) (IndexSpec, error) {
	s = strings.TrimSpace(s)
	a, b, colon := strings.Cut(s, ":")
	var sp IndexSpec
	var err error
	if a = strings.TrimSpace(a); a != "" {
		if sp.Lo, err = strconv.Atoi(a); err != nil {
			return sp, fmt.Errorf("%q is not an integer", a)
		}
		sp.HasLo = true
	}
	if !colon {
		if !sp.HasLo {
			return sp, fmt.Errorf("empty index")
		}
		sp.Single = true
		return sp, nil
	}
	if b = strings.TrimSpace(b); b != "" {
		if sp.Hi, err = strconv.Atoi(b); err != nil {
			return sp, fmt.Errorf("%q is not an integer", b)
		}
		sp.HasHi = true
	}
	return sp, nil
}

// resolve turns the spec into [Lo, Hi) of a dimension of size n.
func (sp IndexSpec) resolve(n int, dim string) (Range, error) {
	fix := func(i int) int {
		if i < 0 {
			return i + n
		}
		return i
	}
	if sp.Single {
		i := fix(sp.Lo)
		if i < 0 || i >= n {
			return Range{}, fmt.Errorf("%s index %d is out of range for size %d", dim, sp.Lo, n)
		}
		return Range{i, i + 1}, nil
	}
	r := Range{0, n}
	if sp.HasLo {
		r.Lo = max(0, fix(sp.Lo))
	}
	if sp.HasHi {
		r.Hi = min(n, fix(sp.Hi))
	}
	if r.Lo >= r.Hi {
		return Range{}, fmt.Errorf("%s slice selects nothing of size %d", dim, n)
	}
	return r, nil
}
