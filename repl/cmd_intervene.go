package repl

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

// cmdSetVar runs `set var TENSOR[ROWS, COLS] = VALUE [--rank R] [--seq S]
// [--tokens A:B] [--persist]`. VALUE is a number, nan, inf or -inf
// (assigned), or an operator and a number applied to the tensor itself:
// `* 0.5`, `+ 1`, also written `stream * 0.5`.
func cmdSetVar(t *Term, args string) error {
	lhs, rhs, ok := strings.Cut(args, "=")
	if !ok {
		return fmt.Errorf("set var: want TENSOR[ROWS, COLS] = VALUE")
	}
	name, index, hasIndex, rest, err := cutIndex(strings.TrimSpace(lhs))
	if err != nil {
		return fmt.Errorf("set var: %w", err)
	}
	if name == "" {
		return fmt.Errorf("set var: which tensor? (at a stop, `print` lists them)")
	}
	req := client.EditRequest{Tensor: name, HasIndex: hasIndex, Op: "="}
	if hasIndex {
		if req.Index, err = client.ParseIndex(index); err != nil {
			return fmt.Errorf("set var: %w", err)
		}
	}
	words, err := splitArgs(rest + " " + rhs)
	if err != nil {
		return fmt.Errorf("set var: %w", err)
	}
	var kept []string
	for _, w := range words {
		if w == "--persist" {
			req.Persist = true
			continue
		}
		kept = append(kept, w)
	}
	sl, vals, err := sliceFlags(kept)
	if err != nil {
		return fmt.Errorf("set var: %w", err)
	}
	req.Slice = sl
	if sl.Rank >= 0 { // named before what the value means, as inject names it
		m, err := t.c.Model()
		if err != nil {
			return fmt.Errorf("set var: %w", err)
		}
		if sl.Rank >= m.World {
			return fmt.Errorf("set var: --rank %d: the model runs on %s (0-%d)", sl.Rank, plural.N(m.World, "rank"), m.World-1)
		}
	}
	self := len(vals) > 0 && vals[0] == name // `stream * 0.5`: the tensor's own name first
	if self {
		vals = vals[1:]
		if len(vals) == 0 {
			return fmt.Errorf("set var: %s = %s changes nothing: give an operator and a number (%s * 0.5)", name, name, name)
		}
	}
	// One number, with its operator in front or written apart: words were
	// joined, so `= 1 1` wrote 11 and `* 2 3` scaled by 23.
	switch {
	case len(vals) <= 1:
	case len(vals) == 2 && len(vals[0]) == 1 && strings.ContainsRune("*/+-", rune(vals[0][0])):
	default:
		return fmt.Errorf("set var: value %q: want one number, or an operator and one number (* 0.5, + 1)", strings.Join(vals, " "))
	}
	expr := strings.Join(vals, "")
	if expr == "" {
		return fmt.Errorf("set var: no value after '='")
	}
	// * and / are always operators; a sign is one after the tensor's name
	// or written apart (`+ 1`, `- 2`), else it belongs to the number
	// (`+1`, `-2`, `+inf`), for + as for -.
	if strings.ContainsRune("*/", rune(expr[0])) || (strings.ContainsRune("+-", rune(expr[0])) && (self || len(vals) > 1)) {
		req.Op, expr = expr[:1], expr[1:]
	}
	if req.Value, err = parseValue(expr); err != nil {
		return fmt.Errorf("set var: %w", err)
	}
	e, err := t.c.SetVar(req)
	if err != nil {
		return fmt.Errorf("set var: %w", err)
	}
	t.emit("edit", e, func() string { return fmt.Sprintf("edit %d: %s", e.ID, e.Text) })
	return nil
}

// parseValue parses a number, nan, inf, +inf or -inf. A literal beyond
// float64's range rounds to ±Inf (and 1e-400 to 0), as IEEE 754 and
// Python's float("1e400") round it and as `break … if` conditions read it
// (inspect/debug's lexer): `set var stream = 1e400` writes +Inf.
func parseValue(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), nil
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		err = nil
	}
	if err != nil {
		return 0, fmt.Errorf("value %q: want a number, nan, inf or -inf, or an operator and a number (* 0.5, + 1)", s)
	}
	return v, nil
}

func cmdPatch(t *Term, args string) error {
	a, err := splitArgs(args)
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	sl, rest, err := sliceFlags(a)
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	if sl.Rank >= 0 || sl.Tokens != nil {
		return fmt.Errorf("patch: only --seq applies (a patch replaces whole sequences on every rank)")
	}
	if len(rest) != 3 || rest[1] != "from" {
		return fmt.Errorf("patch: want TENSOR from DUMP [--seq S] at a stop, or SITE.TENSOR from DUMP to arm it for the next run")
	}
	req := client.PatchRequest{Tensor: rest[0], Dump: rest[2], Seq: sl.Seq}
	if i := strings.LastIndexByte(rest[0], '.'); i >= 0 {
		req.Site, req.Tensor = rest[0][:i], rest[0][i+1:]
		if req.Site == "" || req.Tensor == "" { // ".stream" was patched at the stop as "stream", not armed
			return fmt.Errorf("patch: %q: want TENSOR (at a stop) or SITE.TENSOR (armed for the next run), both named: layers.2.stream", rest[0])
		}
	}
	e, err := t.c.Patch(req)
	if err != nil {
		return err
	}
	t.emit("edit", e, func() string { return fmt.Sprintf("edit %d: %s", e.ID, e.Text) })
	return nil
}

func showEdits(t *Term) error {
	es, err := t.c.Edits()
	if err != nil {
		return err
	}
	t.emit("edits", es, func() string {
		if len(es) == 0 {
			return "No edits."
		}
		return t.editsTable(es)
	})
	return nil
}

// editsTable is the table of edits es (`info edits`).
func (t *Term) editsTable(es []client.Edit) string {
	tb := newTable("id", "site", "step", "tensor", "rows", "cols", "rank", "what", "persist", "armed", "applied").alignRight(0, 2, 10)
	for _, e := range es {
		rank := "all"
		if e.Rank >= 0 {
			rank = strconv.Itoa(e.Rank)
		}
		rows, cols := fmt.Sprintf("%d:%d", e.Rows.Lo, e.Rows.Hi), fmt.Sprintf("%d:%d", e.Cols.Lo, e.Cols.Hi)
		if e.Armed && e.Applied == 0 && e.Rows.Hi == e.Rows.Lo { // known when first applied
			rows, cols = "-", "-"
		}
		tb.add(strconv.Itoa(e.ID), e.Site, strconv.Itoa(e.Step), e.Tensor, rows, cols, rank, e.What, yesNo(e.Persist), yesNo(e.Armed), strconv.Itoa(e.Applied))
	}
	return tb.render(t.st)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func cmdDeleteEdits(t *Term, args string) error {
	ids, err := parseIDs(args, "edit")
	if err != nil {
		return fmt.Errorf("delete edits: %w", err)
	}
	before, err := t.c.Edits()
	if err != nil {
		return err
	}
	if err := t.c.DeleteEdits(ids...); err != nil {
		return err
	}
	es, err := t.c.Edits()
	if err != nil {
		return err
	}
	if es == nil {
		es = []client.Edit{}
	}
	var gone []string // what DeleteEdits removed: listed before, not after (as `delete` reports)
	for _, b := range before {
		if !slices.ContainsFunc(es, func(e client.Edit) bool { return e.ID == b.ID }) {
			gone = append(gone, fmt.Sprintf("edit %d", b.ID))
		}
	}
	t.emit("edits", es, func() string {
		return deletedText(gone, len(es), "edits", func() string { return t.editsTable(es) })
	})
	return nil
}

func cmdLens(t *Term, args string) error {
	k := 5
	if f := strings.Fields(args); len(f) > 1 {
		return unexpectedArgs("lens", f[1:])
	} else if len(f) == 1 {
		var err error
		if k, err = strconv.Atoi(f[0]); err != nil || k < 1 {
			return fmt.Errorf("lens: K %q: want a positive integer", f[0])
		}
	}
	rep, err := t.c.Lens(k)
	if err != nil {
		return err
	}
	t.emit("lens", rep, func() string {
		var b strings.Builder
		b.WriteString(t.heading(rep.Site, rep.Tensor+" → norm → lm_head", rep.Step, "") + "\n")
		texts := false // a model without a tokenizer has no text column (as top's)
		for _, s := range rep.Seqs {
			for _, x := range s.Top {
				texts = texts || x.Text != ""
			}
		}
		for _, s := range rep.Seqs {
			tb := newTable("#", "id", "logit", "prob").alignRight(0, 1, 2, 3)
			if texts {
				tb = newTable("#", "id", "text", "logit", "prob").alignRight(0, 1, 3, 4)
			}
			for i, x := range s.Top {
				cells := []string{strconv.Itoa(i + 1), strconv.Itoa(int(x.ID)), t.num(x.Logit), t.num(x.Prob)}
				if texts {
					cells = slices.Insert(cells, 2, strconv.Quote(x.Text))
				}
				tb.add(cells...)
			}
			fmt.Fprintf(&b, "seq %d (row %d):\n%s", s.Seq, s.Row, tb.render(t.st))
		}
		for _, n := range rep.Notes {
			b.WriteString(t.st.Warn.Render("note: "+n) + "\n")
		}
		return b.String()
	})
	return nil
}

// printAttn runs `print attn_probs --head H [--seq S]`.
func (t *Term) printAttn(args string) error {
	a, err := splitArgs(args)
	if err != nil {
		return fmt.Errorf("print: %w", err)
	}
	sl, extra, err := sliceFlags(a)
	if err != nil {
		return fmt.Errorf("print: %w", err)
	}
	if len(extra) > 0 || sl.Rank >= 0 || sl.Tokens != nil {
		return fmt.Errorf("print attn_probs: only --head H and --seq S apply")
	}
	if sl.Head == nil {
		return fmt.Errorf("print attn_probs: which head? give --head H")
	}
	rep, err := t.c.AttnProbs(*sl.Head, sl.Seq)
	if err != nil {
		return err
	}
	t.emit("attn_probs", rep, func() string { return t.attnText(rep) })
	return nil
}

// maxAttnShown is the widest attention matrix printed as text (JSON has
// it all).
const maxAttnShown = 32

func (t *Term) attnText(rep *client.AttnReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nhead %d of %d (kv head %d) on rank %s, seq %d, scale %s",
		t.heading(rep.Site, "attn_probs", rep.Step, ""), rep.Head, rep.Heads, rep.KVHead, joinInts(rep.Ranks), rep.Seq, t.num(rep.Scale))
	if rep.Window > 0 {
		fmt.Fprintf(&b, ", window %d", rep.Window)
	}
	n := len(rep.Probs)
	shown := min(n, maxAttnShown)
	head := []string{"query\\key"}
	for j := range shown {
		head = append(head, strconv.Itoa(j))
	}
	head = append(head, "sum")
	tb := newTable(head...)
	for i := range shown {
		cells := []string{strconv.Itoa(i)}
		for j := range shown {
			c := ""
			if j <= i && rep.Probs[i][j] != 0 {
				c = strconv.FormatFloat(rep.Probs[i][j], 'f', 3, 64)
			}
			cells = append(cells, c)
		}
		tb.add(append(cells, t.num(rep.RowSums[i]))...)
	}
	b.WriteString("\n" + tb.render(t.st))
	if shown < n {
		fmt.Fprintf(&b, "(first %d of %d tokens; --json has all)\n", shown, n)
	}
	return b.String()
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}

// editsText renders a stop's edits, one "edited:" line each.
func (t *Term) editsText(edits []string) string {
	var b strings.Builder
	for _, e := range edits {
		b.WriteString("\n" + t.st.Warn.Render("edited: "+e))
	}
	return b.String()
}

func cmdSave(t *Term, args string) error {
	a, err := splitArgs(args)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	force := false
	if i := slices.Index(a, "--force"); i >= 0 {
		force, a = true, slices.Delete(a, i, i+1)
	}
	sl, rest, err := sliceFlags(a)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	if len(rest) == 0 {
		return fmt.Errorf("save: which tensor? (at a stop, `print` without a name lists them)")
	}
	name, extra := rest[0], rest[1:]
	if len(extra) != 1 {
		return fmt.Errorf("save: want TENSOR FILE.safetensors|FILE.npy [--rank R] [--seq S] [--tokens A:B] [--force]")
	}
	rep, err := t.c.Save(name, extra[0], sl, force)
	if err != nil {
		return err
	}
	t.emit("save", rep, func() string {
		key := ""
		if rep.Key != "" {
			key = " as " + rep.Key
		}
		return fmt.Sprintf("saved %s %s%s (%s, rows %d:%d) to %s%s", rep.Tensor, shapeText(rep.Shape), key, rep.Source, rep.Rows.Lo, rep.Rows.Hi, rep.Path, "")
	})
	return nil
}

func shapeText(s []int) string {
	var p []string
	for _, x := range s {
		p = append(p, strconv.Itoa(x))
	}
	return "[" + strings.Join(p, ", ") + "]"
}

func cmdCompare(t *Term, args string) error {
	a, err := splitArgs(args)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if len(a) != 1 {
		return fmt.Errorf("compare: want DUMP (an hsdb dump of the same inputs)")
	}
	rep, err := t.c.Compare(a[0])
	if err != nil {
		return err
	}
	t.emit("compare", rep, func() string {
		// A rank column only when a replicated tensor's copies differ.
		perRank := false
		for _, r := range rep.Rows {
			perRank = perRank || r.Rank >= 0
		}
		cols := []string{"tensor", "key", "seq", "tokens", "cosine", "max |Δ|", "max |ref|", "first departure", "ids differ"}
		right := []int{2, 3, 4, 5, 6, 7, 8}
		if perRank {
			cols = append(cols[:3], append([]string{"rank"}, cols[3:]...)...)
			right = append(right, 9)
		}
		tb := newTable(cols...).alignRight(right...)
		for _, r := range rep.Rows {
			first := "none"
			if r.FirstToken >= 0 {
				first = t.st.Warn.Render("token " + strconv.Itoa(r.FirstToken))
			}
			cells := []string{r.Tensor, r.Key, strconv.Itoa(r.Seq), strconv.Itoa(r.Tokens), t.num(r.Cosine), t.num(r.MaxAbs), t.num(r.RefMax), first, strconv.Itoa(r.IDsDiffer)}
			if perRank {
				rk := "all"
				if r.Rank >= 0 {
					rk = strconv.Itoa(r.Rank)
				}
				cells = append(cells[:3], append([]string{rk}, cells[3:]...)...)
			}
			tb.add(cells...)
		}
		rule := fmt.Sprintf("departs: cosine < %g or max |Δ| > %g of max |ref|", rep.CosMin, rep.Rel)
		for _, r := range rep.Rows {
			if r.Exact {
				rule += "; integer tensors (router ids): any value that differs"
				break
			}
		}
		return fmt.Sprintf("%s vs %s (%s)\n%s",
			t.heading(rep.Site, "compare", rep.Step, ""), rep.Dump, rule, tb.render(t.st))
	})
	return nil
}
