package debug

import (
	"fmt"
	"math"

	"hsdb/engine/model"
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
// `diff` uses). The stop's side is the full tensor (gathered or summed);
// a replicated tensor's copies are compared rank by rank (a row per rank,
// CompareRow.Rank) for each sequence whose rows differ between ranks, and
// as one row where they agree. A tensor the dump holds in an integer
// dtype (`capture site layers.N.mlp.gate topk_ids`) is compared exactly:
// a row departs where any id differs (CompareRow.Exact). Errors: ErrNotStopped, an unreadable dump, a dump holding
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
			// A replicated tensor's copies may differ (set var --rank, a
			// diverged rank): each rank's copy is then compared on its own.
			var copies [][]float32
			if l.kind == model.Replicated && len(l.parts) > 1 {
				for r := range l.parts {
					copies = append(copies, l.host(r).F32())
				}
			}
			fv, w := full.F32(), full.Cols()
			need := map[int]seqNeed{}
			for sq, n := range b.SeqLens {
				need[b.Seqs[sq]] = seqNeed{rows: int(b.Pos[b.SeqStart(sq)+n-1]) + 1, cols: w}
			}
			src, err := readDumpSeqs(dir, m, key, need, true)
			if err != nil {
				return fmt.Errorf("compare: %w", err)
			}
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
				base := client.CompareRow{Tensor: t.Name, Key: key, Seq: num, Tokens: n, Rank: -1, Exact: ps.integer}
				tol := rowTolerance(tol, ps.integer)
				if !copiesAgree(copies, r0*w, (r0+n)*w) {
					for r, cv := range copies {
						row := base
						row.Rank = r
						rep.Rows = append(rep.Rows, compareSeq(row, cv, w, ps, b, r0, n, tol))
					}
					continue
				}
				rep.Rows = append(rep.Rows, compareSeq(base, fv, w, ps, b, r0, n, tol))
			}
		}
		if len(rep.Rows) == 0 {
			return fmt.Errorf("compare: %w: dump %s holds nothing of %s (it holds: %s)", client.ErrNoTensor, dir, site, dumpHolds(m))
		}
		return nil
	})
	return rep, err
}

// rowTolerance is the tolerance a compared tensor departs beyond: the
// dump dtype's tol, or for ids (integer, a router's topk_ids) none at all:
// ids are equal or not, and bf16's tolerance would pass expert 382 for 383
// (2⁻⁷ of 383 is 3).
func rowTolerance(tol check.Tolerance, integer bool) check.Tolerance {
	if integer {
		return check.Tolerance{CosMin: math.Inf(-1), Rel: 0}
	}
	return tol
}

// copiesAgree reports whether every copy holds the same values in [lo, hi)
// (bit for bit, NaN equal to NaN); true for no copies.
func copiesAgree(copies [][]float32, lo, hi int) bool {
	for _, c := range copies[min(1, len(copies)):] {
		for i := lo; i < hi; i++ {
			if math.Float32bits(c[i]) != math.Float32bits(copies[0][i]) {
				return false
			}
		}
	}
	return true
}

// compareSeq fills row with the comparison of the stop's rows r0..r0+n-1
// of fv ([tokens, w] row-major) against the dump's sequence ps, rows
// matched by position (b.Pos): cosine and max |Δ| over the rows, the
// reference's max |value|, the first position departing beyond tol, and
// how many ids differ.
func compareSeq(row client.CompareRow, fv []float32, w int, ps patchSeq, b *model.Batch, r0, n int, tol check.Tolerance) client.CompareRow {
	row.FirstToken = -1
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
	return row
}
