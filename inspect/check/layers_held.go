package check

import (
	"fmt"
	"strings"

	"hsdb/inspect/capture"
)

// valuesHeld returns the hsdb layers a file's values hold, in the file's
// order, when its n layer entries were labelled from --layers (the file
// names no layers of its own, as SpecForge's samples, and no dump
// manifest records them) and every one of them departs from the layer
// --layers gives it while matching exactly (whole width, unscaled, rows
// aligned) the output of another decoder layer, a different one each:
// the layers asked are then most likely not the layers captured. nil
// otherwise.
func valuesHeld(ms []EntryMatch, n int) []int {
	var held []int
	seen := map[int]bool{}
	for _, m := range ms {
		if m.Kind != "" || m.Label < 0 {
			continue // hidden_state (the final norm's output): no --layers label
		}
		if m.Condition != "" || m.Regathered > 0 || !m.HasClaimed || m.Close {
			return nil
		}
		b := m.best()
		if !b.Close || b.Cand.Kind != m.Claimed.Kind || b.Cand.World != 0 || b.Align != AlignNone || b.scaled() || b.Cand.Layer == m.Label || seen[b.Cand.Layer] {
			return nil
		}
		seen[b.Cand.Layer] = true
		held = append(held, b.Cand.Layer)
	}
	if n == 0 || len(held) != n {
		return nil
	}
	return held
}

// heldPairs says, per layer entry, which hsdb layer its values match:
// "aux layer 1 matches hsdb layer 0, ..." for SpecForge's aux layers
// (named by the layer --layers gives them), "hidden_states[0] (layer 1 by
// --layers) matches hsdb layer 0, ..." for other unlabelled entries.
func heldPairs(ms []EntryMatch) string {
	var ps []string
	for _, m := range ms {
		if m.Kind != "" || m.Label < 0 {
			continue
		}
		name := fmt.Sprintf("%s (layer %d by --layers)", m.Key, m.Label)
		if strings.HasPrefix(m.Key, "aux_hidden_state") {
			name = fmt.Sprintf("aux layer %d", m.Label)
		}
		ps = append(ps, fmt.Sprintf("%s matches hsdb layer %d", name, m.best().Cand.Layer))
	}
	return strings.Join(ps, ", ")
}

// heldRule is the layer-count rule of a file whose values hold other
// layers than --layers labelled its entries with (valuesHeld): it fails
// naming the layers the file holds and the --layers that checks them.
func heldRule(ms []EntryMatch, held, asked []int) RuleResult {
	return RuleResult{Rule: capture.RuleLayerCount, Status: capture.Fail, Detail: fmt.Sprintf("--layers %s, but the values match other layers: %s: the file holds layers %s, --layers %s checks what it holds (the file names no layers: check labels them from --layers, in order)",
		joinInts(asked), heldPairs(ms), joinInts(held), joinInts(held))}
}

// heldDiagnosis says the same as heldRule in place of the entries' own
// diagnoses, which would blame the file (an off-by-one capture, or
// swapped labels) for labels that came from --layers.
func heldDiagnosis(ms []EntryMatch, held, asked []int) Diagnosis {
	return Diagnosis{
		Sentence: fmt.Sprintf("%s: the file holds layers %s, --layers %s checks what it holds", heldPairs(ms), joinInts(held), joinInts(held)),
		Cause: fmt.Sprintf("the layers asked (--layers %s) differ from the ones captured: the file names no layers, so check labels its entries from --layers in order; only if the capture itself was asked for layers %s did it write the wrong ones",
			joinInts(asked), joinInts(asked)),
	}
}

// nonLayerMatches returns the matches that are not layer entries (a
// SpecForge sample's hidden_state), whose diagnoses stand beside
// heldDiagnosis.
func nonLayerMatches(ms []EntryMatch) []EntryMatch {
	var out []EntryMatch
	for _, m := range ms {
		if m.Kind != "" || m.Label < 0 {
			out = append(out, m)
		}
	}
	return out
}
