package debug

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

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
	if lr := b.LogitRows(); site.Path == client.LMHeadSite && n == len(lr) {
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
func rowRange(st *stopCtx, n int, sl client.Slice, name string) (client.Range, error) {
	if sl.Seq < 0 && sl.Tokens == nil {
		return client.Range{Lo: 0, Hi: n}, nil
	}
	b := st.ev.Batch
	tok := tokenRows(st.ev.Site, b, n)
	if tok == nil {
		return client.Range{}, fmt.Errorf("%s has %s, not one per token of the batch (%d): --seq and --tokens do not apply", name, plural.N(n, "row"), b.Tokens())
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
			return client.Range{}, fmt.Errorf("--seq %d: step %d's batch has %s", sl.Seq, b.Step, seqNumbers(b.Seqs))
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
			return client.Range{}, fmt.Errorf("--tokens %d:%d: %s has %s in step %d", t.Lo, end, what, plural.N(hi-lo, "token"), b.Step)
		}
		lo, hi = lo+t.Lo, lo+end
	}
	r := client.Range{Lo: -1, Hi: -1}
	for i, t := range tok {
		if t >= lo && t < hi {
			if r.Lo < 0 {
				r.Lo = i
			}
			r.Hi = i + 1
		}
	}
	if r.Lo < 0 {
		return client.Range{}, fmt.Errorf("%s has no row for tokens %d:%d of the batch (it holds rows for batch tokens %s only)", name, lo, hi, firstInts(tok))
	}
	return r, nil
}

// seqNumbers names a step's sequences as a user types them: "1 sequence
// (0)", "2 sequences (0-1)" when they run on, else "3 sequences (0, 2,
// 5)", the first 8 of more with "…".
func seqNumbers(seqs []int) string {
	n := len(seqs)
	run := n > 1
	for i := 1; i < n; i++ {
		run = run && seqs[i] == seqs[i-1]+1
	}
	if run {
		return fmt.Sprintf("%s (%d-%d)", plural.N(n, "sequence"), seqs[0], seqs[n-1])
	}
	return fmt.Sprintf("%s (%s)", plural.N(n, "sequence"), firstInts(seqs))
}

// firstInts lists the first 8 of v, "0, 2, 5", with ", …" after them when
// there are more.
func firstInts(v []int) string {
	var s []string
	for i, x := range v {
		if i == 8 {
			s = append(s, "…")
			break
		}
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}
