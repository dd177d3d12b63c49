package repl

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

func (t *Term) heading(site, tensor string, step int, extra string) string {
	return fmt.Sprintf("%s %s  %s%s", t.st.Site.Render(site), tensor, stepName(step), extra)
}

// undefined is what a statistic with no value shows (no finite element,
// no ratio to a zero median).
const undefined = "—"

// stat formats a statistic over finite elements: "—" when s has none.
func (t *Term) stat(s stats.Stats, v float64) string {
	if !s.Defined() {
		return undefined
	}
	return t.num(v)
}

func (t *Term) statCell(r client.RankStats, name string) string {
	v, _ := r.Stats.Get(name)
	if stats.IsFiniteStat(name) {
		return t.stat(r.Stats, v)
	}
	switch name {
	case "nan", "inf", "zeros", "count":
		s := strconv.FormatInt(int64(v), 10)
		if (name == "nan" || name == "inf") && v > 0 {
			return t.st.Bad.Render(s)
		}
		return s
	}
	return t.num(v)
}

// printText renders print's table: one row per rank, then the gathered row.
// The "|Δ| vs rank0" column is there only when some row has a value (a
// replicated tensor on more than one rank): at tp 1, and for a sharded or
// partial tensor, there is nothing to compare, as the JSON, which leaves
// max_abs_diff_rank0 out, says too.
func (t *Term) printText(rep *client.TensorReport) string {
	extra := fmt.Sprintf("  rows %d:%d", rep.Rows.Lo, rep.Rows.Hi)
	if rep.Seq >= 0 {
		extra += fmt.Sprintf(" (seq %d)", rep.Seq)
	}
	diffs := slices.ContainsFunc(rep.Ranks, func(r client.RankStats) bool { return r.DiffRank0 != nil })
	// An integer tensor (a router's topk_ids) shows ids' statistics:
	// mean, std and l2 of ids mean nothing.
	ints := len(rep.Ranks) > 0 && !slices.ContainsFunc(rep.Ranks, func(r client.RankStats) bool { return r.IDs == nil })
	statNames := t.opts.stats
	bound := 0
	if ints {
		statNames = []string{"count", "min", "max", "distinct"}
		if bound = rep.Ranks[0].IDs.Bound; bound > 0 {
			statNames = append(statNames, fmt.Sprintf("outside [0,%d)", bound))
		}
	}
	head := append([]string{"rank", "shape", "dtype", "shard"}, statNames...)
	if diffs {
		head = append(head, "|Δ| vs rank0")
	}
	tb := newTable(head...)
	for i := 4; i < len(head); i++ {
		tb.alignRight(i)
	}
	row := func(r client.RankStats, label string) {
		cells := []string{label, t.st.Shape.Render(shape(r.Shape)), r.DType, r.Shard}
		if strings.HasPrefix(r.Shard, "sharded") || r.Shard == "partial(sum)" {
			cells[3] = t.st.Warn.Render(r.Shard)
		}
		switch {
		case ints && r.IDs != nil:
			ids := r.IDs
			mn, mx := undefined, undefined
			if ids.Distinct > 0 {
				mn, mx = strconv.FormatInt(ids.Min, 10), strconv.FormatInt(ids.Max, 10)
			}
			cells = append(cells, strconv.FormatInt(ids.Count, 10), mn, mx, strconv.Itoa(ids.Distinct))
			if bound > 0 {
				out := strconv.FormatInt(ids.OutOfRange, 10)
				if ids.OutOfRange > 0 {
					out = t.st.Bad.Render(out)
				}
				cells = append(cells, out)
			}
		default:
			for _, s := range t.opts.stats {
				cells = append(cells, t.statCell(r, s))
			}
		}
		switch {
		case !diffs:
		case r.DiffRank0 == nil:
			cells = append(cells, "")
		case r.Diverged:
			cells = append(cells, t.st.Bad.Render(t.num(*r.DiffRank0)+" DIVERGED"))
		default:
			cells = append(cells, t.num(*r.DiffRank0))
		}
		tb.add(cells...)
	}
	for _, r := range rep.Ranks {
		row(r, strconv.Itoa(r.Rank))
	}
	if g := rep.Gathered; g != nil {
		row(*g, t.st.Dim.Render(g.Label))
	}
	out := t.heading(rep.Site, rep.Tensor, rep.Step, extra) + "\n" + tb.render(t.st)
	if rep.Rank0Alone {
		out += t.st.Warn.Render(fmt.Sprintf("note: ranks 1-%d agree with each other: rank 0's copy is the one that differs (the column measures from rank 0)", len(rep.Ranks)-1)) + "\n"
	}
	return out
}

// valuesText is `print T[ROWS, COLS]`: each rank's values, then the
// gathered tensor's. Consecutive ranks whose values are the same to the
// bit (the copies of a replicated tensor, until an edit or a fault makes
// one diverge) are printed once, as "ranks 0-3 … the same on each", so that
// a rank that differs stands out; JSON keeps a block per rank.
func (t *Term) valuesText(rep *client.ValuesReport) string {
	var b strings.Builder
	b.WriteString(t.heading(rep.Site, rep.Tensor, rep.Step, "") + "\n")
	one := func(v client.RankValues, last int) {
		label, same := "rank "+v.Label, ""
		if last > v.Rank {
			label, same = fmt.Sprintf("ranks %d-%d", v.Rank, last), t.st.Dim.Render(", the same on each")
		}
		if v.Rank < 0 {
			label = t.st.Dim.Render(v.Label)
		}
		if v.Missing != "" {
			fmt.Fprintf(&b, "%s  %s  %s\n", label, v.Shard, t.st.Dim.Render("no values: "+v.Missing))
			return
		}
		full := ""
		if v.FullCols != nil { // a shard's own columns, named in the full tensor
			full = fmt.Sprintf(" = full columns %d:%d", v.FullCols.Lo, v.FullCols.Hi)
		}
		fmt.Fprintf(&b, "%s  [%d:%d, %d:%d]%s  %s%s\n", label, v.Rows.Lo, v.Rows.Hi, v.Cols.Lo, v.Cols.Hi, full, v.Shard, same)
		for i, row := range v.Values {
			cells := make([]string, len(row))
			for j, x := range row {
				cells[j] = t.num(x)
				if math.IsNaN(x) || math.IsInf(x, 0) {
					cells[j] = t.st.Bad.Render(cells[j])
				}
			}
			fmt.Fprintf(&b, "  %d: [%s]\n", v.Rows.Lo+i, strings.Join(cells, ", "))
		}
	}
	for i := 0; i < len(rep.Ranks); {
		j := i + 1
		for j < len(rep.Ranks) && rep.Ranks[j].Rank == rep.Ranks[j-1].Rank+1 && sameValues(rep.Ranks[i], rep.Ranks[j]) {
			j++
		}
		one(rep.Ranks[i], rep.Ranks[j-1].Rank)
		i = j
	}
	if rep.Gathered != nil {
		one(*rep.Gathered, -1)
	}
	return b.String()
}

// sameValues reports whether two ranks' printed blocks are the same: the
// same shard, rows and columns of their own tensor (no full-column
// mapping: a shard's columns are another part of the tensor) and values
// equal to the bit (NaN payloads and the sign of zero included).
func sameValues(a, b client.RankValues) bool {
	if a.Rank < 0 || b.Rank < 0 || a.Missing != "" || b.Missing != "" || a.FullCols != nil || b.FullCols != nil ||
		a.Shard != b.Shard || a.Rows != b.Rows || a.Cols != b.Cols || len(a.Values) != len(b.Values) {
		return false
	}
	for i, row := range a.Values {
		if len(row) != len(b.Values[i]) {
			return false
		}
		for j, x := range row {
			if math.Float64bits(x) != math.Float64bits(b.Values[i][j]) {
				return false
			}
		}
	}
	return true
}

// maxIDBars is the most bars hist draws for an integer tensor: a bar per
// id up to that many distinct ids, past it contiguous ranges of ids
// (stats.IDs.Ranges).
const maxIDBars = 64

func (t *Term) histText(rep *client.HistReport) string {
	if rep.IDs != nil {
		return t.idHistText(rep)
	}
	var b strings.Builder
	h := rep.Hist
	st := rep.Stats
	fmt.Fprintf(&b, "%s\n%s %s  mean %s  std %s  min %s  max %s\n", t.heading(rep.Site, rep.Tensor, rep.Step, ""), rep.Source,
		t.st.Shape.Render(shape(rep.Shape)), t.stat(st, st.Mean), t.stat(st, st.Std), t.stat(st, st.Min), t.stat(st, st.Max))
	if len(h.Counts) == 0 {
		b.WriteString(t.st.Bad.Render("no finite values") + "\n")
	}
	var peak int64
	for _, c := range h.Counts {
		peak = max(peak, c)
	}
	// Bins are [lo, hi) but the last, which holds the maximum: [lo, hi].
	// One bin of equal ends is the single value every element has: [v, v].
	los, his := make([]string, len(h.Counts)), make([]string, len(h.Counts))
	wlo, whi := 0, 0
	for i := range h.Counts {
		los[i], his[i] = t.num(h.Edge(i)), t.num(h.Edge(i+1))
		wlo, whi = max(wlo, len(los[i])), max(whi, len(his[i]))
	}
	tb := newTable().alignRight(2)
	for i, c := range h.Counts {
		n := 0
		if peak > 0 {
			n = int(math.Round(float64(c) / float64(peak) * float64(t.opts.width)))
		}
		if c > 0 && n == 0 {
			n = 1
		}
		end := ")"
		if i == len(h.Counts)-1 {
			end = "]"
		}
		tb.add(fmt.Sprintf("[%*s, %*s%s", wlo, los[i], whi, his[i], end), strings.Repeat("█", n), strconv.FormatInt(c, 10))
	}
	b.WriteString(tb.render(t.st))
	if h.NaN > 0 || h.Inf > 0 {
		b.WriteString(t.st.Bad.Render(fmt.Sprintf("not shown: %d NaN, %d Inf", h.NaN, h.Inf)) + "\n")
	}
	return b.String()
}

// idHistText is hist of an integer tensor (a router's topk_ids): the
// smallest and largest id, the number of distinct ids and, when the
// expert count is known, the ids outside [0, E), then one bar per id that
// occurs (its element count), not equal-width bins; past maxIDBars
// distinct ids a bar per range [a, b] of whole ids (stats.IDs.Ranges),
// never a fractional edge.
func (t *Term) idHistText(rep *client.HistReport) string {
	var b strings.Builder
	ids := rep.IDs
	mn, mx := undefined, undefined
	if ids.Distinct > 0 {
		mn, mx = strconv.FormatInt(ids.Min, 10), strconv.FormatInt(ids.Max, 10)
	}
	fmt.Fprintf(&b, "%s\n%s %s  min %s  max %s  distinct %d", t.heading(rep.Site, rep.Tensor, rep.Step, ""), rep.Source,
		t.st.Shape.Render(shape(rep.Shape)), mn, mx, ids.Distinct)
	if ids.Bound > 0 {
		out := fmt.Sprintf("outside [0,%d) %d", ids.Bound, ids.OutOfRange)
		if ids.OutOfRange > 0 {
			out = t.st.Bad.Render(out)
		}
		b.WriteString("  " + out)
	}
	b.WriteString("\n")
	if ids.Distinct == 0 {
		b.WriteString(t.st.Bad.Render("no ids") + "\n")
		return b.String()
	}
	bars, ranged := idBars(ids)
	if ranged {
		fmt.Fprintf(&b, "%d distinct ids, more than %d: a bar per range [a, b] of ids\n", ids.Distinct, maxIDBars)
	}
	var peak int64
	for _, r := range bars {
		peak = max(peak, r.Count)
	}
	wlo, whi := 0, 0 // widths of the ranges' ends, aligned as float bins are
	for _, r := range bars {
		wlo, whi = max(wlo, len(strconv.FormatInt(r.Lo, 10))), max(whi, len(strconv.FormatInt(r.Hi, 10)))
	}
	tb := newTable().alignRight(0, 2)
	for _, r := range bars {
		label := strconv.FormatInt(r.Lo, 10)
		if ranged {
			label = fmt.Sprintf("[%*d, %*d]", wlo, r.Lo, whi, r.Hi)
		}
		if r.Outside {
			label = t.st.Bad.Render(label)
		}
		n := 0
		if peak > 0 {
			n = int(math.Round(float64(r.Count) / float64(peak) * float64(t.opts.width)))
		}
		if r.Count > 0 && n == 0 {
			n = 1
		}
		tb.add(label, strings.Repeat("█", n), strconv.FormatInt(r.Count, 10))
	}
	b.WriteString(tb.render(t.st))
	return b.String()
}

// idBars are the bars hist draws for an integer tensor: one per id that
// occurs (Lo = Hi = the id), or past maxIDBars distinct ids the ranges of
// stats.IDs.Ranges (ranged true); Outside marks ids outside [0, Bound).
func idBars(ids *stats.IDs) (bars []stats.IDRange, ranged bool) {
	if ids.Distinct > maxIDBars {
		return ids.Ranges(maxIDBars), true
	}
	bars = []stats.IDRange{}
	for _, c := range ids.Counts {
		out := ids.Bound > 0 && (c.ID < 0 || c.ID >= int64(ids.Bound))
		bars = append(bars, stats.IDRange{Lo: c.ID, Hi: c.ID, Count: c.Count, Outside: out})
	}
	return bars, false
}

// idHistView is `hist --json` of an integer tensor (a router's topk_ids):
// integers only. ids holds the exact count of every id (stats.IDs, with
// the smallest and largest id, the distinct ids and those outside [0, E));
// bars are the text's bars, integer edges [lo, hi] both included, one per
// id (lo = hi) or, past 64 distinct ids (ranged), ranges of whole ids. The
// float statistics and equal-width float bins a float tensor gets (mean,
// std, bins with fractional edges) mean nothing for ids and are left out.
type idHistView struct {
	Site   string          `json:"site"`
	Tensor string          `json:"tensor"`
	Step   int             `json:"step"`
	Source string          `json:"source"`
	Shape  []int           `json:"shape"`
	IDs    *stats.IDs      `json:"ids"`
	Ranged bool            `json:"ranged"`
	Bars   []stats.IDRange `json:"bars"`
}

// idHistJSON is rep's idHistView (rep.IDs must be set).
func idHistJSON(rep *client.HistReport) idHistView {
	bars, ranged := idBars(rep.IDs)
	return idHistView{Site: rep.Site, Tensor: rep.Tensor, Step: rep.Step, Source: rep.Source, Shape: rep.Shape, IDs: rep.IDs, Ranged: ranged, Bars: bars}
}

// topText renders top's table. The token column is the batch token; where
// the tensor's rows are not the batch's tokens one to one (lm_head's
// last-token logits, rows that are not tokens) a row column says which row
// of the tensor it is.
func (t *Term) topText(rep *client.TopReport) string {
	if len(rep.Channels) == 0 { // every value NaN or Inf: no median, nothing to rank
		return fmt.Sprintf("%s\n%s: no finite value, nothing to rank (`print` counts the NaN and Inf)", t.heading(rep.Site, rep.Tensor, rep.Step, ""), rep.Source)
	}
	rowCol := false
	for _, c := range rep.Channels {
		rowCol = rowCol || c.Token != c.Row
	}
	head := []string{"#", "channel", "value", "×median", "token", "seq", "pos"}
	if rowCol {
		head = append(head, "row")
	}
	texts := false
	for _, c := range rep.Channels {
		texts = texts || c.Text != ""
	}
	if texts {
		head = append(head, "text")
	}
	tb := newTable(head...).alignRight(0, 1, 2, 3, 4, 5, 6, 7)
	for i, c := range rep.Channels {
		tok, seq, pos := "", "", ""
		if c.Token >= 0 {
			tok, seq, pos = strconv.Itoa(c.Token), strconv.Itoa(c.Seq), strconv.Itoa(c.Pos)
		}
		ratio := undefined
		if c.Ratio != nil {
			ratio = t.num(*c.Ratio)
			if *c.Ratio >= 100 {
				ratio = t.st.Warn.Render(ratio)
			}
		}
		cells := []string{strconv.Itoa(i + 1), strconv.Itoa(c.Col), t.num(c.Value), ratio, tok, seq, pos}
		if rowCol {
			cells = append(cells, strconv.Itoa(c.Row))
		}
		if texts {
			cells = append(cells, strconv.Quote(c.Text))
		}
		tb.add(cells...)
	}
	med := "n/a (no finite value)"
	if m := rep.MedianAb; m != nil {
		med = t.num(*m)
		if *m == 0 {
			med += " (no ratio to a zero median: " + undefined + ")"
		}
	}
	return fmt.Sprintf("%s\n%s, median |value| %s\n%s", t.heading(rep.Site, rep.Tensor, rep.Step, ""), rep.Source, med, tb.render(t.st))
}

func (t *Term) ranksText(rep *client.RanksReport) string {
	var b strings.Builder
	b.WriteString(t.heading(rep.Site, rep.Tensor, rep.Step, "") + "\n")
	for r, s := range rep.Shards {
		fmt.Fprintf(&b, "  rank %d: %s\n", r, s)
	}
	if len(rep.Pairs) == 0 {
		b.WriteString("one rank: nothing to compare\n")
		return b.String()
	}
	tb := newTable("ranks", "relation", "first diff [row, col]", "values", "max |Δ|", "differ", "detail")
	for _, p := range rep.Pairs {
		rel := p.Relation
		switch rel {
		case "equal":
			rel = t.st.Good.Render(rel)
		case "diverged":
			rel = t.st.Bad.Render(rel)
		}
		first, vals, mx, n := "", "", "", ""
		if p.First != nil {
			first = fmt.Sprintf("[%d, %d]", p.First[0], p.First[1])
			vals = t.num(p.ValA) + " vs " + t.num(p.ValB)
			mx = t.num(p.MaxAbs)
			n = strconv.FormatInt(p.Differ, 10)
		}
		tb.add(fmt.Sprintf("%d-%d", p.A, p.B), rel, first, vals, mx, n, t.st.Dim.Render(p.Detail))
	}
	b.WriteString(tb.render(t.st))
	return b.String()
}

// shapesPerRank shows shapes once when every rank agrees, else per rank.
func shapesPerRank(per [][]int) string {
	same := true
	for _, s := range per[1:] {
		same = same && shape(s) == shape(per[0])
	}
	if same {
		return shape(per[0])
	}
	var parts []string
	for r, s := range per {
		parts = append(parts, fmt.Sprintf("r%d %s", r, shape(s)))
	}
	return strings.Join(parts, " ")
}

func (t *Term) backtraceText(frames []client.Frame) string {
	var b strings.Builder
	for _, f := range frames {
		site := f.Site
		if site == "" {
			site = "(root)"
		}
		fmt.Fprintf(&b, "#%d  %s  %s", f.Level, t.st.Site.Render(site), f.Class)
		if len(f.Inputs) > 0 && len(f.Inputs[0]) > 0 {
			var ins []string
			for i := range f.Inputs[0] {
				per := make([][]int, len(f.Inputs))
				for r := range f.Inputs {
					if i < len(f.Inputs[r]) {
						per[r] = f.Inputs[r][i]
					}
				}
				ins = append(ins, t.st.Shape.Render(shapesPerRank(per)))
			}
			fmt.Fprintf(&b, "  in: %s", strings.Join(ins, ", "))
		}
		b.WriteString("\n")
		if len(f.Outputs) > 0 {
			var outs []string
			for i, o := range f.Outputs[0] {
				per := make([][]int, len(f.Outputs))
				for r := range f.Outputs {
					per[r] = f.Outputs[r][i].Shape
				}
				outs = append(outs, o.Name+" "+t.st.Shape.Render(shapesPerRank(per)))
			}
			fmt.Fprintf(&b, "    out: %s\n", strings.Join(outs, ", "))
		}
		if len(f.Devices) > 0 {
			fmt.Fprintf(&b, "    on: %s\n", strings.Join(f.Devices, ", "))
		}
	}
	return b.String()
}
