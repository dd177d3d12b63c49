package client

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"hsdb/inspect/capture"
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
// batch's; Head picks the head of attn_probs.
type Slice struct {
	Rank   int
	Seq    int
	Tokens *Range
	// Head selects an attention head for attn_probs (hist, top); nil for
	// every other tensor.
	Head *int
}

// All is the Slice of every rank and token.
var All = Slice{Rank: -1, Seq: -1}

// ParseRange parses "A:B", "A:" or ":B" (B exclusive; Hi -1 for an open
// end) or "A" (one row). Errors name the text: a bound that is not a
// non-negative integer, B <= A, a single row A whose end A+1 would
// overflow int, or an empty text (`--tokens=`), which names no row.
func ParseRange(s string) (Range, error) {
	if strings.TrimSpace(s) == "" { // else row 0: a missing A is 0 only before a colon
		return Range{}, fmt.Errorf("range %q: want A:B, A:, :B or one row A", s)
	}
	a, b, colon := strings.Cut(s, ":")
	r := Range{Hi: -1}
	var err error
	if a != "" {
		if r.Lo, err = strconv.Atoi(strings.TrimSpace(a)); err != nil || r.Lo < 0 {
			return r, fmt.Errorf("range %q: %q is not a non-negative integer", s, a)
		}
	}
	switch {
	case !colon && r.Lo == math.MaxInt: // its end, Lo + 1, would wrap to a negative Hi
		return r, fmt.Errorf("range %q: row %d has no end below the largest integer", s, r.Lo)
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

// Resolve turns the spec into [Lo, Hi) of a dimension of size n, counting
// negative indices from the end as Python does and clipping a slice to
// [0, n). Errors name dim: a single index outside the size, or a slice that
// selects nothing.
func (sp IndexSpec) Resolve(n int, dim string) (Range, error) {
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

// ParseIDs parses a list of token ids as `--ids` takes it
// (capture.SplitIDs): separated by commas or spaces ("1, 17,250", "1 17
// 250"), in brackets or not ("[1, 17, 250]", as `input` prints a batch).
// Errors: SplitIDs', or an item that is not an int32, named with its
// position. Ranges against the vocabulary are checked by the caller.
func ParseIDs(text string) ([]int32, error) {
	var out []int32
	items, err := capture.SplitIDs(text)
	if err != nil {
		return nil, err
	}
	for i, f := range items {
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("ids %q: item %d %q is not an integer", text, i+1, f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}
