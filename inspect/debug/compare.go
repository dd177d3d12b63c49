package debug

import (
	"fmt"
	"math"

	"hsdb/engine/tensor"
	"hsdb/inspect/check"
	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

// Compare compares every tensor of the stopped site that the dump at dir
// holds (a layer capture of the same half, or a site capture) with the
// dump, sequence by sequence, rows matched by position: cosine and max |Δ|
// over the step's rows of the sequence, and the first position whose row
// departs (cosine below the tolerance's CosMin, or max |Δ| above Rel of
// the reference's max |value|; check.ToleranceFor the dump's dtype, as
// `diff` uses). The stop's side is the full tensor (gathered, summed or
// rank 0's). Errors: ErrNotStopped, an unreadable dump, a dump holding
// nothing of the site, a sequence the dump lacks or shorter than the
// positions of this step.
func (s *Session) Compare(dir string) (*client.CompareReport, error) {
	m, err := readHsdbDump(dir, "compare")
	if err != nil {
		return nil, err
	}
	dt, err := tensor.ParseDType(m.Capture.DType)
	if err != nil {
		dt = tensor.F32
	}
	tol := check.ToleranceFor(dt)
	var rep *client.CompareReport
	err = s.at(func(st *stopCtx) error {
		site := st.ev.Site.Path
		rep = &client.CompareReport{Site: site, Step: st.ev.Step, Dump: dir, CosMin: tol.CosMin, Rel: tol.Rel, Rows: []client.CompareRow{}}
		b := st.ev.Batch
		for _, t := range st.views[0].Tensors {
			key := dumpKey(m, site, t.Name)
			if key == "" {
				continue
			}
			src, err := readDumpSeqs(dir, m, key)
			if err != nil {
				return fmt.Errorf("compare: %w", err)
			}
			l, err := s.locate(st, t.Name, client.All)
			if err != nil {
				return err
			}
			full, _, _, err := l.source(client.All)
			if err != nil {
				return err
			}
			if full.Rows() != b.Tokens() {
				return fmt.Errorf("compare: %s at %s has %d rows, not one per token (%d)", t.Name, site, full.Rows(), b.Tokens())
			}
			fv, w := full.F32(), full.Cols()
			for sq, n := range b.SeqLens {
				num := b.Seqs[sq]
				ps, ok := src[num]
				if !ok {
					return fmt.Errorf("compare: %w: dump %s has no sequence %d", client.ErrMismatch, dir, num)
				}
				r0 := b.SeqStart(sq)
				if ps.rows.Cols() != w || ps.rows.Rows() < int(b.Pos[r0+n-1])+1 {
					return fmt.Errorf("compare: %w: %s of sequence %d is [%d, %d] in the dump, this step needs %d rows of %d", client.ErrMismatch, key, num, ps.rows.Rows(), ps.rows.Cols(), int(b.Pos[r0+n-1])+1, w)
				}
				row := client.CompareRow{Tensor: t.Name, Key: key, Seq: num, Tokens: n, FirstToken: -1}
				ref := ps.rows.F32()
				var dot, na, nb float64
				for i := range n {
					pos := int(b.Pos[r0+i])
					if ps.ids[pos] != b.IDs[r0+i] {
						row.IDsDiffer++
					}
					var rd, rdot, ra, rb, rmax float64
					for c := range w {
						x, y := float64(fv[(r0+i)*w+c]), float64(ref[pos*w+c])
						rd = math.Max(rd, math.Abs(x-y))
						if x != y && (math.IsNaN(x) || math.IsNaN(y)) {
							rd = math.Inf(1)
						}
						rdot, ra, rb = rdot+x*y, ra+x*x, rb+y*y
						rmax = math.Max(rmax, math.Abs(y))
					}
					dot, na, nb = dot+rdot, na+ra, nb+rb
					row.MaxAbs = math.Max(row.MaxAbs, rd)
					row.RefMax = math.Max(row.RefMax, rmax)
					if row.FirstToken < 0 && !(stats.Cosine(rdot, ra, rb) >= tol.CosMin && rd <= tol.Rel*rmax) {
						row.FirstToken = pos
					}
				}
				row.Cosine = stats.Cosine(dot, na, nb)
				rep.Rows = append(rep.Rows, row)
			}
		}
		if len(rep.Rows) == 0 {
			return fmt.Errorf("compare: %w: dump %s holds nothing of %s (it holds: %s)", client.ErrNoTensor, dir, site, dumpHolds(m))
		}
		return nil
	})
	return rep, err
}
