package repl

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/tensor"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

// num formats a statistic with the precision option's significant digits.
func (t *Term) num(v float64) string { return strconv.FormatFloat(v, 'g', t.opts.precision, 64) }

func shape(s []int) string { return tensor.ShapeString(s) }

func seqLens(lens []int) string {
	var parts []string
	for i, n := range lens {
		parts = append(parts, fmt.Sprintf("seq %d: %d", i, n))
	}
	return strings.Join(parts, ", ")
}

func stepName(step int) string {
	if step == 0 {
		return "step 0 (prefill)"
	}
	return fmt.Sprintf("step %d (decode)", step)
}

func (t *Term) batchText(v batchView) string {
	var b strings.Builder
	seqs, more := v.Seqs, 0
	if v.set && len(seqs) > stopSeqsInline {
		// Just set and big (input file): the first few, as a stop line
		// lists them; `input` alone lists every sequence, each whole.
		lo, hi := v.SeqLens[0], v.SeqLens[0]
		for _, n := range v.SeqLens {
			lo, hi = min(lo, n), max(hi, n)
		}
		fmt.Fprintf(&b, "batch: %s, %s (shortest %d, longest %d)\n", plural.N(len(v.Seqs), "sequence"), plural.N(v.Tokens, "token"), lo, hi)
		seqs, more = seqs[:stopSeqsInline], len(seqs)-stopSeqsInline
	} else {
		fmt.Fprintf(&b, "batch: %s, %s (%s)\n", plural.N(len(v.Seqs), "sequence"), plural.N(v.Tokens, "token"), seqLens(v.SeqLens))
	}
	for i, q := range seqs {
		if v.set && len(q) > batchIDsWhole { // just set: a long sequence clipped as `info batch` clips it
			sv := batchSeqView{Seq: i, Tokens: len(q), IDs: q}
			if i < len(v.Text) {
				sv.Text = &v.Text[i]
				sv.head, _ = t.piecesText(q[:batchIDsHead], false)
				sv.tail, _ = t.piecesText(q[len(q)-batchIDsTail:], true)
			}
			b.WriteString(t.batchSeqLine(sv) + "\n")
			continue
		}
		line := fmt.Sprintf("  seq %d: %s", i, idsText(q))
		if i < len(v.Text) {
			line += "  " + t.st.Dim.Render(strconv.Quote(v.Text[i]))
		}
		b.WriteString(line + "\n")
	}
	if more > 0 {
		fmt.Fprintf(&b, "  … %d more (`input` alone lists them all)\n", more)
	}
	for _, n := range v.Notes {
		b.WriteString(t.st.Warn.Render("note: "+n) + "\n")
	}
	return b.String()
}

// stopSeqsInline is the most sequences a stop line lists one by one; a
// larger batch is summarised (count, shortest, longest) so that the line
// stays one line, and `info batch` lists them.
const stopSeqsInline = 4

// stopText: "Stopped at model.layers.2 (LlamaDecoderLayer)  step 0 (prefill)
// tokens 8 (seq 0: 5, seq 1: 3)  [breakpoint 1]", or for a big batch
// "tokens 640 in 64 sequences (shortest 3, longest 20; info batch lists them)".
func (t *Term) stopText(s *client.Stop) string {
	return fmt.Sprintf("Stopped at %s (%s)  %s  tokens %d %s  %s\n  %s%s",
		t.st.Site.Render(s.Site), s.Class, stepName(s.Step), s.Tokens, stopSeqs(s),
		t.st.Warn.Render("["+joinAtMost(s.Reasons, "; ", "`info break` lists them")+"]"),
		t.st.Dim.Render("tensors: "+strings.Join(s.Tensors, ", ")), t.notesText(s.Notes)+t.editsText(s.Edits))
}

// listInline is the most items a line of text lists one by one (the
// breakpoints a stop hit, those already set at a site): thousands of
// breakpoints at one site made each stop line, and each `break` there,
// a line of hundreds of kilobytes (10,000 `break`s printed 58 MB).
const listInline = 8

// joinAtMost joins the first listInline items with sep and says how many
// more there are and where they are listed (hint).
func joinAtMost(items []string, sep, hint string) string {
	if len(items) <= listInline {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%sand %d more (%s)", strings.Join(items[:listInline], sep), sep, len(items)-listInline, hint)
}

// stopSeqs is the stop line's account of the batch's sequences.
func stopSeqs(s *client.Stop) string {
	if len(s.SeqLens) <= stopSeqsInline {
		var seqs []string
		for i, n := range s.SeqLens {
			seqs = append(seqs, fmt.Sprintf("seq %d: %d", s.Seqs[i], n))
		}
		return "(" + strings.Join(seqs, ", ") + ")"
	}
	lo, hi := s.SeqLens[0], s.SeqLens[0]
	for _, n := range s.SeqLens {
		lo, hi = min(lo, n), max(hi, n)
	}
	return fmt.Sprintf("in %d sequences (shortest %d, longest %d; info batch lists them)", len(s.SeqLens), lo, hi)
}

// notesText renders notes, one "note:" line each (after a newline).
func (t *Term) notesText(notes []string) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString("\n" + t.st.Warn.Render("note: "+n))
	}
	return b.String()
}

// idsText writes token ids as `input ids` takes them back: "[1, 403, 407]".
func idsText(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func (t *Term) doneText(d *client.Done) string {
	var b strings.Builder
	what := "prefill"
	if d.DecodeSteps > 0 {
		what = plural.N(d.DecodeSteps, "decode step")
		if d.Prefill {
			what = "prefill and " + what
		}
	}
	fmt.Fprintf(&b, "Finished: %s\n", what)
	for i, next := range d.Next {
		line := fmt.Sprintf("  seq %d: %s", i, plural.N(d.SeqLens[i], "token"))
		if len(d.Generated) > i && len(d.Generated[i]) > 0 {
			g := d.Generated[i]
			if len(g) > 16 {
				line += fmt.Sprintf(", generated %d tokens (last 16: %s)", len(g), idsText(g[len(g)-16:]))
			} else {
				line += ", generated " + idsText(g)
			}
			if i < len(d.GeneratedText) {
				line += " " + t.st.Dim.Render(strconv.Quote(d.GeneratedText[i]))
			}
		}
		line += fmt.Sprintf(", next %d", next)
		if i < len(d.NextText) {
			line += " " + t.st.Dim.Render(strconv.Quote(d.NextText[i]))
		}
		b.WriteString(line + "\n")
	}
	if n := t.notesText(d.Notes); n != "" {
		b.WriteString(n[1:] + "\n")
	}
	return b.String()
}

func (t *Term) traceText(l client.TraceLine) string {
	var parts []string
	for _, ts := range l.Tensors {
		parts = append(parts, ts.Name+" "+t.st.Shape.Render(shape(ts.Shape)))
	}
	return fmt.Sprintf("%s[%d] %s%s (%s)  %s", t.st.Dim.Render("trace "), l.Step, strings.Repeat("  ", l.Depth-1),
		t.st.Site.Render(l.Site), l.Class, strings.Join(parts, ", "))
}

func (t *Term) bpCreatedText(b client.Breakpoint) string {
	if b.Kind == "watch" {
		return fmt.Sprintf("Watch %d: %s %s (at %s showing %s)", b.ID, b.Tensor, b.Cond, plural.N(b.Sites, "site"), b.Tensor)
	}
	kind := "Breakpoint"
	if b.Temporary {
		kind = "Temporary breakpoint"
	}
	s := fmt.Sprintf("%s %d at %s (%s)", kind, b.ID, b.Pattern, plural.N(b.Sites, "site"))
	if b.Cond != "" {
		s += " if " + b.Cond
	}
	return s
}

func (t *Term) breakpointsText(bps []client.Breakpoint) string {
	if len(bps) == 0 {
		return "no breakpoints or watches"
	}
	tb := newTable("id", "kind", "enabled", "temp", "where", "condition", "hits").alignRight(0, 6)
	for _, b := range bps {
		where := b.Pattern
		if b.Kind == "watch" {
			where = b.Tensor
		}
		en := "y"
		if !b.Enabled {
			en = t.st.Dim.Render("n")
		}
		tmp := ""
		if b.Temporary {
			tmp = "y"
		}
		cond := b.Cond
		if b.Ignore > 0 {
			cond = strings.TrimSpace(cond + fmt.Sprintf(" (ignore next %d)", b.Ignore))
		}
		tb.add(strconv.Itoa(b.ID), b.Kind, en, tmp, where, cond, strconv.Itoa(b.Hits))
	}
	return tb.render(t.st)
}
