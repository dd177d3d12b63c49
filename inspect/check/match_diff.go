package check

import (
	"fmt"
	"sort"

	"hsdb/inspect/capture"
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
// layer and what it best matches, then the first layer where the capture
// departs from hsdb beyond tolerance (and from which token), or that none
// does. departs is true when one does or nothing could be compared.
func (r *Report) DiffLines() (lines []string, departs bool) {
	lines = append(lines, r.Path+":")
	if r.Err != nil {
		return append(lines, "  cannot read: "+r.Err.Error()), true
	}
	if len(r.Matches) == 0 {
		detail := "no entry whose rows align with input_ids"
		if x, ok := r.Rule(capture.RuleMatch); ok && x.Detail != "" {
			detail = x.Detail
		}
		return append(lines, "  nothing compared: "+detail), true
	}
	lines = append(lines, fmt.Sprintf("  %-22s %6s %10s %10s  %s", "entry", "layer", "cos", "max|Δ|", "best match"))
	for _, m := range r.Matches {
		lab, cos, mx := "?", "-", "-"
		if m.Label >= 0 {
			lab = fmt.Sprint(m.Label)
		}
		if m.HasClaimed {
			cos, mx = fmt.Sprintf("%.6f", m.ClaimedScore.Cos), fmt.Sprintf("%.3g", m.ClaimedScore.MaxAbs)
		}
		lines = append(lines, fmt.Sprintf("  %-22s %6s %10s %10s  %s (cos %.6f)", m.Key, lab, cos, mx, m.Best, m.BestScore.Cos))
	}
	if len(r.SeqLens) > 1 {
		lines = append(lines, fmt.Sprintf("  the file holds %d sequences flattened (%s tokens); compared as such", len(r.SeqLens), joinIntsSep(r.SeqLens, " + ")))
	}
	d, ok := Departure(r.Matches)
	switch {
	case ok:
		lines = append(lines, fmt.Sprintf("  first departure: layer %d (%s) from token %d: cos %.6f, max|Δ| %.3g (tolerance: cos ≥ %g, max|Δ| ≤ %g of max|x| %.3g); it matches %s",
			d.Label, d.Key, d.FirstBadRow, d.ClaimedScore.Cos, d.ClaimedScore.MaxAbs, d.Tol.CosMin, d.Tol.Rel, d.ClaimedScore.RefMax, d.Best))
		return lines, true
	default:
		labelled := false
		for _, m := range r.Matches {
			labelled = labelled || m.HasClaimed
		}
		if !labelled {
			return append(lines, "  no layer labels: give --layers to compare each entry with the layer it claims"), true
		}
		return append(lines, fmt.Sprintf("  no departure: every labelled layer is within tolerance of hsdb (cos ≥ %g, max|Δ| ≤ %g of max|x|)", r.Matches[0].Tol.CosMin, r.Matches[0].Tol.Rel)), false
	}
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
