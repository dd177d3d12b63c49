package worker

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// lensHost answers `lens` on rows of an earlier pipeline stage's tensor
// that the front sends as f32 [rows, hidden]: this last stage's final norm
// and LM head applied to them, replied as lens does.
func (s *server) lensHost(d *dec, e *enc) (reply byte) {
	x := d.tensor()
	if d.err != nil {
		e.str(d.err.Error())
		return kindError
	}
	if x.DType != tensor.F32 || len(x.Shape) != 2 || x.Shape[1] != s.e.Dims.Hidden || x.Shape[0] < 1 {
		e.str(fmt.Sprintf("worker rank %d: lens rows %s %v, want f32 [rows, %d]", s.rank, x.DType, x.Shape, s.e.Dims.Hidden))
		return kindError
	}
	lw, ok := s.e.Lens(0)
	if !ok {
		e.str(fmt.Sprintf("worker rank %d: this stage holds no final norm and lm_head", s.rank))
		return kindError
	}
	defer s.deviceErrorReply(e, &reply)
	s.dev.PushScope()
	defer s.dev.PopScope()
	rows := make([]int32, x.Shape[0])
	for i := range rows {
		rows[i] = int32(i)
	}
	h, lo := model.LensLogits(s.dev, lw, s.fromHost(x), rows)
	return lensReply(e, h, lo, lw.VocabSize)
}

// lens answers the debugger's `lens` on a tensor of the open visit: the
// rank's final norm and LM head applied to the given rows
// (model.LensLogits); it replies kindLensReply with the shard's first
// token id, vocab_size and the logits (or none), or kindError.
func (s *server) lens(d *dec, e *enc) (reply byte) {
	idx := d.int()
	n := d.count(4)
	rows := make([]int32, 0, n)
	for range n {
		rows = append(rows, int32(d.u32()))
	}
	if d.err != nil {
		e.str(d.err.Error())
		return kindError
	}
	if idx < 0 || idx >= len(s.flat) || s.flat[idx] == nil {
		e.str(fmt.Sprintf("worker rank %d: no device tensor %d at this site", s.rank, idx))
		return kindError
	}
	t := s.flat[idx]
	tr, _ := rowsCols(t.Shape())
	for _, r := range rows {
		if r < 0 || int(r) >= tr {
			e.str(fmt.Sprintf("worker rank %d: lens row %d outside %s's %d rows", s.rank, r, s.names[idx], tr))
			return kindError
		}
	}
	lw, ok := s.e.Lens(0)
	if !ok {
		e.str(fmt.Sprintf("worker rank %d: this architecture does not expose its final norm and lm_head", s.rank))
		return kindError
	}
	defer s.deviceErrorReply(e, &reply)
	h, lo := model.LensLogits(s.dev, lw, t, rows)
	return lensReply(e, h, lo, lw.VocabSize)
}

// lensReply encodes a lens answer: the shard's first token id lo,
// vocab_size, and the logits h [rows, shard vocab] f32 when this rank
// holds any (nil: none), as the front's lens reader expects it; it
// returns kindLensReply.
func lensReply(e *enc, h *tensor.Tensor, lo, vocab int) byte {
	e.int(lo)
	e.int(vocab)
	e.bool(h != nil)
	if h != nil {
		e.tensor(h)
	}
	return kindLensReply
}
