package debug

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

// located is a tensor found on every rank at a stop, with the row range a
// Slice selects.
type located struct {
	st    *stopCtx
	name  string
	parts []model.SiteTensor // by rank
	rows  client.Range
	kind  model.ShardKind
	// experts is the model's routed expert count (config.json's
	// n_routed_experts), 0 for a dense model: topk_ids' bound at a site
	// without the router's logits (the MoE block).
	experts int
}

func (s *Session) locate(st *stopCtx, name string, sl client.Slice) (*located, error) {
	if sl.Head != nil {
		return nil, fmt.Errorf("--head applies to attn_probs only (print, hist and top attn_probs --head H), not to %s", name)
	}
	if sl.Rank >= 0 {
		if err := s.checkRank(sl.Rank); err != nil {
			return nil, err
		}
	}
	l := &located{st: st, name: name, experts: s.E.Dims.Named["n_routed_experts"]}
	for _, v := range st.views {
		t, ok := v.Tensor(name)
		if !ok {
			var names []string
			for _, t := range v.Tensors {
				names = append(names, t.Name)
			}
			if len(names) == 0 { // a frame on a module without inputs (`up` to model)
				return nil, fmt.Errorf("%w: %s shows no tensors (a module without inputs), not %q", client.ErrNoTensor, st.ev.Site.Path, name)
			}
			return nil, fmt.Errorf("%w: %s shows %s, not %q", client.ErrNoTensor, st.ev.Site.Path, strings.Join(names, ", "), name)
		}
		l.parts = append(l.parts, t)
	}
	l.kind = l.parts[0].Shard.Kind
	var err error
	l.rows, err = rowRange(st, rows(l.parts[0]), sl, name)
	return l, err
}

// host copies rank r's selected rows (all columns) to the host.
func (l *located) host(r int) *tensor.Tensor {
	t := l.parts[r]
	return toHost(l.st.views[r], t, l.rows.Lo, l.rows.Hi, 0, cols(t))
}

// gathered returns the full tensor of the selected rows (nil for a
// replicated tensor or a single rank) and its label.
func (l *located) gathered() (*tensor.Tensor, string, error) {
	if l.kind == model.Replicated || len(l.parts) == 1 {
		return nil, "", nil
	}
	ps := make([]stats.Part, len(l.parts))
	for r, t := range l.parts {
		ps[r] = stats.Part{Rank: r, Shard: t.Shard, Data: l.host(r)}
	}
	g, err := stats.Gather(ps)
	if err != nil {
		return nil, "", fmt.Errorf("%s at %s: %w", l.name, l.st.ev.Site.Path, err)
	}
	if l.kind == model.Partial {
		return g, "sum", nil
	}
	return g, "gathered", nil
}

func (l *located) rowsShape(r int) []int {
	s := append([]int(nil), l.parts[r].Shape()...)
	if len(s) > 0 {
		s[0] = l.rows.Hi - l.rows.Lo
	}
	return s
}

func dtypeOf(t model.SiteTensor) string {
	return rawDType(t).String()
}

func rawDType(t model.SiteTensor) tensor.DType {
	if t.T != nil {
		return t.T.DType()
	}
	return t.Host.DType
}

// idBound is the number of valid ids of integer tensor name at the stop,
// 0 when unknown: for topk_ids, the expert count E, the columns of the
// router's logits [tokens, E] at the same site (vLLM's FusedMoE topk_ids
// index experts 0..E-1), or at a site without them (the MoE block, which
// shows the gate's topk_ids again) the model's n_routed_experts.
func (l *located) idBound() int {
	if l.name != "topk_ids" || len(l.st.views) == 0 || l.parts[0].Shard.Kind != model.Replicated {
		return 0
	}
	if t, ok := l.st.views[0].Tensor("logits"); ok {
		if t.Shard.Kind != model.Sharded {
			return cols(t)
		}
		return 0
	}
	return l.experts
}

// ids returns the id statistics of rank r's selected rows when the tensor
// is an integer one, nil for a float tensor.
func (l *located) ids(r int) *stats.IDs {
	if rawDType(l.parts[r]).IsFloat() {
		return nil
	}
	s := stats.IDsOf(l.host(r).F32(), l.idBound())
	return &s
}

// Print returns the statistics of tensor name at the stop over sl.
// Errors: ErrNotStopped, ErrNoTensor, ErrRank, a bad sequence or token
// range, shards that do not fit together (stats.ErrShardMismatch).
func (s *Session) Print(name string, sl client.Slice) (*client.TensorReport, error) {
	var rep *client.TensorReport
	err := s.at(func(st *stopCtx) error {
		l, err := s.locate(st, name, sl)
		if err != nil {
			return err
		}
		rep = &client.TensorReport{Site: st.ev.Site.Path, Tensor: name, Step: st.ev.Step, Rows: l.rows, Seq: sl.Seq}
		var ref []float32
		ms := rankMoments(st.views, l.parts, sl.Rank, l.rows.Lo, l.rows.Hi)
		for r, t := range l.parts {
			if sl.Rank >= 0 && r != sl.Rank {
				continue
			}
			row := client.RankStats{Rank: r, Label: fmt.Sprint(r), Shape: l.rowsShape(r), DType: dtypeOf(t), Shard: t.Shard.String(),
				Stats: stats.FromMoments(ms[r]), IDs: l.ids(r)}
			if l.kind == model.Replicated && r > 0 {
				if ref == nil {
					ref = l.host(0).F32()
				}
				d, err := stats.Compare(ref, l.host(r).F32())
				if err != nil {
					return fmt.Errorf("%s: rank %d vs rank 0: %w", name, r, err)
				}
				row.DiffRank0, row.Diverged = &d.MaxAbs, !d.Equal
			}
			rep.Ranks = append(rep.Ranks, row)
		}
		if sl.Rank >= 0 {
			return nil
		}
		if l.kind == model.Replicated && len(rep.Ranks) >= 3 && !slices.ContainsFunc(rep.Ranks[1:], func(r client.RankStats) bool { return !r.Diverged }) {
			alone, one := true, l.host(1).F32()
			for r := 2; r < len(l.parts) && alone; r++ {
				d, err := stats.Compare(one, l.host(r).F32())
				alone = err == nil && d.Equal
			}
			rep.Rank0Alone = alone
		}
		g, label, err := l.gathered()
		if err != nil || g == nil {
			return err
		}
		gs := l.rowsShape(0)
		gs[len(gs)-1] = g.Cols()
		rep.Gathered = &client.RankStats{Rank: -1, Label: label, Shape: gs, DType: dtypeOf(l.parts[0]), Shard: "full", Stats: stats.Of(g.F32())}
		if !rawDType(l.parts[0]).IsFloat() {
			ids := stats.IDsOf(g.F32(), l.idBound())
			rep.Gathered.IDs = &ids
		}
		return nil
	})
	return rep, err
}

// Values returns the elements idx selects (rows counted within the rows sl
// selects). A column index outside one rank's columns leaves that rank
// without values (RankValues.Missing). Errors: as Print, a row index out of
// range, a column index that selects nothing anywhere, more than MaxValues
// values.
func (s *Session) Values(name string, idx client.Index, sl client.Slice) (*client.ValuesReport, error) {
	var rep *client.ValuesReport
	err := s.at(func(st *stopCtx) error {
		l, err := s.locate(st, name, sl)
		if err != nil {
			return err
		}
		rr, err := idx.Rows.Resolve(l.rows.Hi-l.rows.Lo, "row")
		if err != nil {
			// Not the shape: name[rows, cols] reads as an index, and rank
			// 0's shape is not a sharded tensor's.
			return fmt.Errorf("%s: %w (the %d rows selected)", name, err, l.rows.Hi-l.rows.Lo)
		}
		rr.Lo, rr.Hi = rr.Lo+l.rows.Lo, rr.Hi+l.rows.Lo
		rep = &client.ValuesReport{Site: st.ev.Site.Path, Tensor: name, Step: st.ev.Step}
		// colErr: why the column index selected nothing, against the
		// widest view tried (the gathered or summed tensor, else the first
		// rank), named "rank R" or by the view's label.
		var colErr error
		shown := 0
		pick := func(label string, rank int, shard string, data func(c0, c1 int) *tensor.Tensor, ncols int) (*client.RankValues, error) {
			rv := &client.RankValues{Rank: rank, Label: label, Shard: shard, Rows: rr, Values: [][]float64{}}
			cr, err := idx.Cols.Resolve(ncols, "column")
			if err != nil {
				view := label
				if rank >= 0 {
					view = fmt.Sprintf("rank %d", rank)
				}
				if colErr == nil || rank < 0 {
					colErr = fmt.Errorf("%s (%s): %w", name, view, err)
				}
				rv.Missing = fmt.Sprintf("the index selects none of its %d columns", ncols)
				return rv, nil
			}
			if n := (rr.Hi - rr.Lo) * (cr.Hi - cr.Lo); n > client.MaxValues {
				return nil, fmt.Errorf("%s[%d:%d, %d:%d] is %d values, more than %d: narrow the index", name, rr.Lo, rr.Hi, cr.Lo, cr.Hi, n, client.MaxValues)
			}
			h := data(cr.Lo, cr.Hi)
			rv.Cols = cr
			v, w := h.F32(), cr.Hi-cr.Lo
			for i := 0; i < rr.Hi-rr.Lo; i++ {
				row := make([]float64, w)
				for j := range row {
					row[j] = float64(v[i*w+j])
				}
				rv.Values = append(rv.Values, row)
			}
			shown++
			return rv, nil
		}
		for r, t := range l.parts {
			if sl.Rank >= 0 && r != sl.Rank {
				continue
			}
			v := st.views[r]
			rv, err := pick(fmt.Sprint(r), r, t.Shard.String(), func(c0, c1 int) *tensor.Tensor { return toHost(v, t, rr.Lo, rr.Hi, c0, c1) }, cols(t))
			if err != nil {
				return err
			}
			if t.Shard.Kind == model.Sharded && rv.Missing == "" {
				rv.FullCols = &client.Range{Lo: t.Shard.Start + rv.Cols.Lo, Hi: t.Shard.Start + rv.Cols.Hi}
			}
			rep.Ranks = append(rep.Ranks, *rv)
		}
		if sl.Rank < 0 {
			g, label, err := l.gathered()
			if err != nil {
				return err
			}
			if g != nil {
				off := rr.Lo - l.rows.Lo
				rep.Gathered, err = pick(label, -1, "full", func(c0, c1 int) *tensor.Tensor {
					return hostSlice(g, off, off+rr.Hi-rr.Lo, c0, c1)
				}, g.Cols())
				if err != nil {
					return err
				}
			}
		}
		if shown == 0 {
			return colErr
		}
		return nil
	})
	return rep, err
}

// source picks the data hist and top look at: rank sl.Rank when given,
// else the gathered tensor for sharded/partial tensors, else rank 0. It
// returns the data, its first column in the full tensor, and a label.
func (l *located) source(sl client.Slice) (*tensor.Tensor, int, string, error) {
	if sl.Rank >= 0 {
		t := l.parts[sl.Rank]
		base := 0
		if t.Shard.Kind == model.Sharded {
			base = t.Shard.Start
		}
		return l.host(sl.Rank), base, fmt.Sprintf("rank %d (%s)", sl.Rank, t.Shard), nil
	}
	g, label, err := l.gathered()
	if err != nil {
		return nil, 0, "", err
	}
	if g != nil {
		return g, 0, label, nil
	}
	return l.host(0), 0, "rank 0 (" + l.parts[0].Shard.String() + ")", nil
}

// Hist returns a histogram of tensor name in bins bins.
func (s *Session) Hist(name string, bins int, sl client.Slice) (*client.HistReport, error) {
	var rep *client.HistReport
	err := s.at(func(st *stopCtx) error {
		if name == AttnProbsName {
			a, err := attnSlice(st, sl)
			if err != nil {
				return err
			}
			v := attnValues(a)
			rep = &client.HistReport{Site: st.ev.Site.Path, Tensor: name, Step: st.ev.Step, Source: attnSource(a), Shape: []int{len(a.Probs), len(a.Probs)}, Stats: stats.Of(v), Hist: stats.Histogram(v, bins)}
			return nil
		}
		l, err := s.locate(st, name, sl)
		if err != nil {
			return err
		}
		d, _, src, err := l.source(sl)
		if err != nil {
			return err
		}
		v := d.F32()
		rep = &client.HistReport{Site: st.ev.Site.Path, Tensor: name, Step: st.ev.Step, Source: src, Shape: d.Shape, Stats: stats.Of(v), Hist: stats.Histogram(v, bins)}
		if !rawDType(l.parts[0]).IsFloat() {
			ids := stats.IDsOf(v, l.idBound())
			rep.IDs = &ids
		}
		return nil
	})
	return rep, err
}

// Top returns the k channels of tensor name with the largest |value|.
// A router's topk_ids (expert ids per top-k slot) is refused, naming
// hist; an expert load's channels are experts and rank as any tensor's.
func (s *Session) Top(name string, k int, sl client.Slice) (*client.TopReport, error) {
	if k < 1 {
		return nil, fmt.Errorf("top: K %d: want at least 1", k)
	}
	var rep *client.TopReport
	err := s.at(func(st *stopCtx) error {
		if name == AttnProbsName {
			return attnTop(st, sl, k, &rep)
		}
		l, err := s.locate(st, name, sl)
		if err != nil {
			return err
		}
		if dt := rawDType(l.parts[0]); !dt.IsFloat() && name == "topk_ids" {
			// Expert ids in top-k slots: the largest id says nothing of a
			// channel. (An expert load's channels are experts: its top
			// are the busiest.)
			// The MoE block shows the gate's topk_ids but not its load: name
			// the gate's site, where tokens_per_expert is.
			busiest := "`top tokens_per_expert` lists the busiest"
			if _, ok := st.views[0].Tensor("tokens_per_expert"); !ok {
				busiest = fmt.Sprintf("`top tokens_per_expert` at %s.gate (break there) lists the busiest", st.ev.Site.Path)
			}
			return fmt.Errorf("top: %s at %s holds expert ids (%s), one per top-k slot, not values top ranks by |value|: `hist %s` counts each expert's picks, %s", name, st.ev.Site.Path, dt, name, busiest)
		}
		d, base, src, err := l.source(sl)
		if err != nil {
			return err
		}
		v := d.F32()
		rep = &client.TopReport{Site: st.ev.Site.Path, Tensor: name, Step: st.ev.Step, Source: src}
		if med, ok := stats.MedianAbs(v); ok {
			rep.MedianAb = &med
		}
		b := st.ev.Batch
		tok := tokenRows(st.ev.Site, b, rows(l.parts[0]))
		seqOf := b.SeqOf()
		for _, c := range stats.TopChannels(v, d.Rows(), d.Cols(), k, base) {
			e := client.TopEntry{Channel: c, Token: -1, Seq: -1, Pos: -1}
			row := c.Row + l.rows.Lo
			e.Row = row
			prev := int32(-1)
			if tok != nil {
				t := tok[row]
				e.Token, e.Seq, e.Pos = t, b.Seqs[seqOf[t]], int(b.Pos[t])
				prev = b.IDs[t]
			}
			if name == "logits" && st.ev.Site.Path == client.LMHeadSite {
				e.Text = s.pieceText(prev, []int32{int32(c.Col)}) // the token as it follows the row's
			}
			rep.Channels = append(rep.Channels, e)
		}
		return nil
	})
	return rep, err
}

// CheckTensor checks what can be checked of `print name` with sl before any
// stop (a display is checked when it is set, not at every stop): that some
// site of the model shows a tensor called name and that sl.Rank, when
// given, is a rank of the world. Errors: ErrNoTensor, ErrRank.
func (s *Session) CheckTensor(name string, sl client.Slice) error {
	if sl.Rank >= 0 {
		if err := s.checkRank(sl.Rank); err != nil {
			return err
		}
	}
	for _, st := range s.E.Tree.Sites {
		if slices.Contains(st.Tensors, name) {
			return nil
		}
	}
	return fmt.Errorf("%w: no site shows a tensor named %q (%s)", client.ErrNoTensor, name, tensorHint(s.E.Tree.Sites))
}

// rankMoments reduces rows [r0,r1) of every rank's part (of rank only
// when it is >= 0), one goroutine per rank: ranks in worker processes then
// compute theirs side by side, the stop costing about one round trip to a
// worker instead of one per rank. A rank's panic (a device error, a dead
// worker) is raised again here, the lowest rank's first.
func rankMoments(views []*model.RankView, parts []model.SiteTensor, only, r0, r1 int) []tensor.Moments {
	out := make([]tensor.Moments, len(parts))
	panics := make([]any, len(parts))
	var wg sync.WaitGroup
	for r, t := range parts {
		if only >= 0 && r != only {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[r] = recover() }()
			out[r] = moments(views[r], t, r0, r1, 0, cols(t))
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	return out
}
