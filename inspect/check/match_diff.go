package check

import (
	"fmt"
	"sort"
	"unicode/utf8"

	"hsdb/inspect/capture"
	plurals "hsdb/inspect/plural"
)

// Departure returns the first entry, in layer order (unlabelled entries by
// position), whose claimed tensor departs from hsdb's beyond tolerance, or
// ok=false when every labelled entry is close.
func Departure(ms []EntryMatch) (EntryMatch, bool) {
	sorted := append([]EntryMatch(nil), ms...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Label < sorted[j].Label })
	for _, m := range sorted {
		if m.HasClaimed && !m.Close {
			return m, true
		}
	}
	return EntryMatch{}, false
}

// DiffLines renders a report as `hsdb diff` prints it: per captured entry
// the layer it claims, its cosine and max |Δ| against hsdb's tensor at that
// layer and its best explanation on values, then the first layer where
// the capture departs from hsdb beyond tolerance (and from which token),
// or that none does, and the verdict check gives the same file (one
// engine: diff fails exactly when check does). departs is true unless the
// verdict is VerdictValid.
func (r *Report) DiffLines() (lines []string, departs bool) {
	lines = append(lines, r.Path+":")
	if r.Err != nil {
		return append(lines, "  cannot read: "+r.errText()), true
	}
	if len(r.Matches) == 0 {
		detail := "no entry whose rows align with " + r.ids()
		if x, ok := r.Rule(capture.RuleMatch); ok && x.Detail != "" {
			detail = x.Detail
		}
		lines = append(lines, "  nothing compared: "+detail)
		return append(lines, r.verdictLines()...), true
	}
	// The key column is as wide as the longest key (trainer formats'
	// keys, "hidden_states[:, 3] (speculators id 3)", are long).
	w := 22
	for _, m := range r.Matches {
		w = max(w, utf8.RuneCountInString(m.Key))
	}
	lines = append(lines, fmt.Sprintf("  %-*s %6s %10s %10s  %s", w, "entry", "layer", "cos", "max|Δ|", "best explanation"))
	for _, m := range r.Matches {
		lab, cos, mx := "?", "-", "-"
		switch {
		case m.Label >= 0:
			lab = fmt.Sprint(m.Label)
		case m.Kind == CandEmbed: // the format names it: speculators id 0
			lab = "emb"
		case m.Kind == CandNormed: // SpecForge's hidden_state, model.norm's output
			lab = "norm"
		}
		if m.HasClaimed {
			cos, mx = fmt.Sprintf("%.6f", m.ClaimedScore.Cos), fmt.Sprintf("%.3g", m.ClaimedScore.MaxAbs)
		}
		b := m.best()
		best := fmt.Sprintf("%s (cos %.6f)", b, b.Score.Cos)
		switch {
		case m.Condition != "":
			best = m.Condition
		case m.nothing():
			best = m.nothingText()
		}
		lines = append(lines, fmt.Sprintf("  %-*s %6s %10s %10s  %s", w, m.Key, lab, cos, mx, best))
	}
	if len(r.SeqLens) > 1 {
		lines = append(lines, fmt.Sprintf("  the file holds %d sequences flattened (%s tokens); compared as such", len(r.SeqLens), joinIntsSep(r.SeqLens, " + ")))
	}
	d, ok := Departure(r.Matches)
	switch {
	case ok:
		verb := "it matches"
		if !d.best().Close {
			verb = "closest"
		}
		lines = append(lines, fmt.Sprintf("  first departure: layer %d (%s) from token %d: cos %.6f, max|Δ| %.3g (tolerance: cos ≥ %g, max|Δ| ≤ %g of max|x| %.3g); %s %s",
			d.Label, d.Key, d.FirstBadRow, d.ClaimedScore.Cos, d.ClaimedScore.MaxAbs, d.Tol.CosMin, d.Tol.Rel, d.ClaimedScore.RefMax, verb, d.reading()))
	case firstLayoutProblem(r.Matches) != nil:
		m := firstLayoutProblem(r.Matches)
		what := m.Condition
		if m.Regathered > 0 {
			what = fmt.Sprintf("%d column shards stacked along rows; side by side: %s", m.Regathered, m.reading())
		}
		lines = append(lines, fmt.Sprintf("  first problem: %s holds %s", m.Key, what))
	default:
		unlabelled := 0
		for _, m := range r.Matches {
			if !m.HasClaimed {
				unlabelled++
			}
		}
		switch {
		case unlabelled == len(r.Matches):
			lines = append(lines, "  no layer labels: each entry compared with its best explanation only (give --layers to compare with the layer it claims)")
		case unlabelled > 0: // a SpecForge sample: its hidden_state is named by the format, its aux layers by nothing
			lines = append(lines, fmt.Sprintf("  no departure: every labelled entry (%s) is within tolerance of hsdb (cos ≥ %g, max|Δ| ≤ %g of max|x|); %s no layer label (layer ?): each compared with its best explanation only (give --layers to compare with the layers claimed)",
				plurals.Of(len(r.Matches)-unlabelled, "entry", "entries"), r.Matches[0].Tol.CosMin, r.Matches[0].Tol.Rel, plurals.Of(unlabelled, "entry has", "entries have")))
		default:
			lines = append(lines, fmt.Sprintf("  no departure: every labelled layer is within tolerance of hsdb (cos ≥ %g, max|Δ| ≤ %g of max|x|)", r.Matches[0].Tol.CosMin, r.Matches[0].Tol.Rel))
		}
	}
	return append(lines, r.verdictLines()...), r.Verdict() != VerdictValid
}

// verdictLines are the verdict and, when it is not valid, the failing
// rules and diagnoses check reports for the same file.
func (r *Report) verdictLines() []string {
	v := r.Verdict()
	out := []string{"  verdict: " + v.String()}
	if v == VerdictValid {
		return out
	}
	for _, x := range r.Rules {
		if x.Status == capture.Fail {
			out = append(out, fmt.Sprintf("  FAIL  %s: %s", x.Rule, x.Detail))
		}
	}
	for _, d := range r.Diagnoses {
		out = append(out, "  diagnosis: "+d.Sentence)
		if d.Cause != "" {
			out = append(out, "    most likely cause: "+d.Cause)
		}
	}
	return out
}

// firstLayoutProblem is the first entry whose values are wrong in a way no
// departure measures (a value condition, shards stacked along rows), or
// nil.
func firstLayoutProblem(ms []EntryMatch) *EntryMatch {
	for i := range ms {
		if ms[i].Condition != "" || ms[i].Regathered > 0 {
			return &ms[i]
		}
	}
	return nil
}

// Comparable reports whether diff had anything to judge in the file: it
// was read, at least one entry's rows aligned with input_ids, and at least
// one of those claims a layer (a label or --layers). When false, diff has
// no verdict (`hsdb diff` exits 2: nothing comparable).
func (r *Report) Comparable() bool {
	if r.Err != nil {
		return false
	}
	for _, m := range r.Matches {
		if m.HasClaimed {
			return true
		}
	}
	return false
}
