package capture

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"hsdb/inspect/plural"
)

// validateDump applies the dump-level rules to a dump of n sequences of
// which nbad are not validated (bad: the first few of their ids).
func (w *DumpWriter) validateDump(expected, n, nbad int, bad []string) []ValidationRecord {
	var out []ValidationRecord
	add := func(rule string, ok bool, format string, a ...any) {
		st := Pass
		if !ok {
			st = Fail
		}
		out = append(out, ValidationRecord{Rule: rule, Status: st.String(), Detail: fmt.Sprintf(format, a...)})
	}
	if expected > 0 {
		add(RuleSeqCount, n == expected, "%s, %d expected", plural.N(n, "sequence"), expected)
	} else {
		add(RuleSeqCount, n > 0, "%s", plural.N(n, "sequence"))
	}
	add(RuleValidated, nbad == 0, "%d of %s re-read and validated%s", n-nbad, plural.N(n, "file"), listNote(bad))
	if w.plan != nil {
		add(RuleLayerCount, len(w.plan.IDs) > 0, "%s ids %s", w.plan.Format, joinInts(w.plan.IDs))
	} else {
		what := fmt.Sprintf("layers %s (%s)%s", joinInts(w.m.Capture.Layers), w.m.Capture.What, sitesNote(w.m.Capture.Sites))
		if len(w.m.Capture.Layers) == 0 { // site captures alone
			what = strings.TrimPrefix(sitesNote(w.m.Capture.Sites), ", ")
		}
		if what == "" {
			what = "nothing captured"
		}
		add(RuleLayerCount, len(w.m.Capture.Layers)+len(w.m.Capture.Sites) > 0, "%s", what)
	}
	var reps []string
	ok := true
	var first string
	for _, k := range keysInLayerOrder(slices.Collect(maps.Keys(w.m.Replicas))) {
		r := w.m.Replicas[k]
		ok = ok && r.OK
		switch {
		case r.OK:
		case first == "":
			first = k
			reps = append(reps, fmt.Sprintf("%s: %s", k, r.Describe()))
		default:
			reps = append(reps, fmt.Sprintf("%s (by %.3g)", k, r.MaxRelDiff))
		}
	}
	if len(reps) > 1 {
		reps = []string{reps[0] + "; also " + strings.Join(reps[1:], ", ")}
	}
	if len(reps) > 0 { // "by 0.161" beside print's "|Δ| vs rank0 1.118": say which measure this is
		reps[0] += " (each difference is of the copies' mean, l2, min and max, relative to the tensor's largest |value|; `print` gives the elementwise max |Δ|)"
	}
	if l, err := strconv.Atoi(strings.TrimPrefix(first, "hidden_states.")); err == nil && first != "" {
		// The first layer captured whose copies differ: the site where
		// they part is in it (or in a layer before it not captured).
		reps = append(reps, fmt.Sprintf("to find where the copies part: `break layers.%d.*`, `break layers.%d`, `run`, and `print` each stop's tensors (a copy that differs is marked DIVERGED; `step` enters a module; the first stop's input or input_residual differing: they parted in an earlier layer)", l, l))
	}
	switch {
	case len(w.m.Replicas) == 0:
		out = append(out, ValidationRecord{Rule: RuleReplicas, Status: Skip.String(), Detail: "one rank"})
	case ok:
		add(RuleReplicas, true, "%s equal on every rank", plural.N(len(w.m.Replicas), "captured tensor"))
	default:
		add(RuleReplicas, false, "%s", strings.Join(reps, "; "))
	}
	return out
}

func listNote(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	if len(ids) > 5 {
		ids = append(ids[:5:5], "...")
	}
	return "; not validated: " + strings.Join(ids, ", ")
}

func sitesNote(s []SiteInfo) string {
	if len(s) == 0 {
		return ""
	}
	var k []string
	for _, x := range s {
		k = append(k, x.Key)
	}
	return ", sites " + strings.Join(k, ", ")
}
