package capture

import (
	"fmt"
	"maps"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// stepMark is a sequence's recording before a decode step: its token count
// and each key's row count.
type stepMark struct {
	ids  int
	rows map[string]int
}

// recordIDs appends each sequence's tokens of batch b (a prefill, step 0,
// starts the sequence over). A sequence first seen after its start — a
// capture armed after `run`, then `gen` — is refused (the capture's error,
// returned at dump): its file would hold the generated tokens without the
// prompt they continue, which no check can reproduce.
//
// A decode step that begins at a position the recording has passed is one
// that ran before and was aborted (`kill` at a stop in it, a persistent
// edit that no longer applied), now run again by `gen`: the aborted
// attempt's ids and rows are dropped first, so that the sequence holds
// each position once. They were appended twice (ids [1, 2, 419, 419, 432]
// for a sequence of four tokens, the layers before the stop shifted by a
// row), and a dump of layers the abort had passed validated.
func (c *Capturer) recordIDs(b *model.Batch) {
	c.batch = b
	rolledBack := false
	defer func() {
		if b.Step == 0 {
			return
		}
		if rolledBack {
			if c.repsBefore != nil {
				c.reps = c.repsBefore
			}
			c.under = c.underBefore // set with the marks rolled back to
		}
		c.repsBefore = maps.Clone(c.reps) // a record's slices are replaced by merge, never changed in place
		c.underBefore = maps.Clone(c.under)
	}()
	for s, n := range b.SeqLens {
		num := b.Seqs[s]
		ids := b.IDs[b.SeqStart(s) : b.SeqStart(s)+n]
		sc := c.seqs[num]
		pos := -1 // the step's first position in the sequence, when the batch says
		if len(b.Pos) > b.SeqStart(s) {
			pos = int(b.Pos[b.SeqStart(s)])
		}
		if sc == nil && b.Step > 0 && pos > 0 {
			c.fail(fmt.Errorf("%w: sequence %d: the capture was armed after its first %d tokens had run, so it holds only the tokens from position %d on (decode step %d); `run` again (then `gen`) to capture whole sequences",
				ErrCapture, num, pos, pos, b.Step))
		}
		if sc == nil || b.Step == 0 {
			sc = &SeqCapture{Seq: num, Tensors: map[string]*tensor.Tensor{}}
			c.seqs[num] = sc
		}
		if b.Step > 0 && pos >= 0 && pos < len(sc.IDs) {
			if m := sc.before; m != nil && m.ids == pos {
				sc.rollback(m)
				rolledBack = true
			} else {
				c.fail(fmt.Errorf("%w: sequence %d: decode step %d begins at position %d, but %d tokens are recorded and the rows past it are not those of one step; `run` again (then `gen`) to capture whole sequences",
					ErrCapture, num, b.Step, pos, len(sc.IDs)))
			}
		}
		if b.Step > 0 {
			m := &stepMark{ids: len(sc.IDs), rows: make(map[string]int, len(sc.Tensors))}
			for k, t := range sc.Tensors {
				m.rows[k] = t.Rows()
			}
			sc.before = m
		}
		sc.IDs = append(sc.IDs, ids...)
	}
}

// rollback drops what was recorded after mark m: the ids past m.ids and
// each key's rows past its count then (a key first recorded after it, by a
// capture armed at the aborted stop, entirely).
func (sc *SeqCapture) rollback(m *stepMark) {
	sc.IDs = sc.IDs[:m.ids]
	for k, t := range sc.Tensors {
		r, ok := m.rows[k]
		switch {
		case !ok:
			delete(sc.Tensors, k)
		case t.Rows() > r:
			sc.Tensors[k] = t.SliceRows(0, r)
		}
	}
}
