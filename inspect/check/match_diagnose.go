package check

import (
	"fmt"
	"strings"
)

// matchDiagnoses explains entries that are not what their label claims
// (or, unlabelled, not a decoder layer's stream), naming what they match
// and the most likely cause.
func matchDiagnoses(ms []EntryMatch) []Diagnosis {
	var out []Diagnosis
	for _, m := range ms {
		if m.HasClaimed && m.Close {
			continue
		}
		b, s := m.Best, m.BestScore
		bestClose := m.Tol.Close(s)
		head := m.Key
		if m.Label >= 0 {
			head = fmt.Sprintf("%s: labelled layer %d", m.Key, m.Label)
		}
		if !bestClose {
			if !m.HasClaimed && m.Label >= 0 {
				continue // no candidate of the claimed shape: the shape diagnosis says why
			}
			d := Diagnosis{Sentence: fmt.Sprintf("%s, matches nothing hsdb computes within tolerance (closest: %s, cos %.6f, max|Δ| %.3g)", head, b, s.Cos, s.MaxAbs),
				Cause: "the values differ from hsdb's forward pass: another model or weights, other input_ids, or a numerical problem upstream"}
			if m.HasClaimed {
				d.Sentence = fmt.Sprintf("%s, departs from hsdb's %s (cos %.6f, max|Δ| %.3g, first at token %d); closest: %s (cos %.6f)",
					head, m.Claimed, m.ClaimedScore.Cos, m.ClaimedScore.MaxAbs, m.FirstBadRow, b, s.Cos)
			}
			out = append(out, d)
			continue
		}
		if m.Label < 0 && b.Kind == CandStream && b.World == 0 {
			if m.Stacked > 0 { // say what the per-token rows are once stacked
				out = append(out, Diagnosis{Sentence: fmt.Sprintf("%s (unlabelled) matches %s (cos %.6f, max|Δ| %.3g)", m.Key, b, s.Cos, s.MaxAbs)})
			}
			continue // an unlabelled layer output: nothing wrong to say
		}
		d := Diagnosis{Sentence: fmt.Sprintf("%s, matches %s (cos %.6f, max|Δ| %.3g)", head, b, s.Cos, s.MaxAbs)}
		if m.Label < 0 {
			d.Sentence = fmt.Sprintf("%s (unlabelled) matches %s (cos %.6f, max|Δ| %.3g)", m.Key, b, s.Cos, s.MaxAbs)
		}
		d.Cause = matchCause(m.Label, b)
		if strings.Contains(m.Key, "speculators id") && b.Kind == CandStream && b.World == 0 && b.Layer == m.Label+1 {
			d.Cause = fmt.Sprintf("a wrong layer-id convention: the ids are SGLang's (SpecForge: id s = decoder layer s's output), not speculators' (id k = the stream entering layer k = decoder layer k-1's output); this is speculators id %d = SGLang id %d", b.Layer+1, b.Layer)
		}
		out = append(out, d)
	}
	return out
}

// matchCause is the most likely cause of a capture labelled layer label
// that matches b instead.
func matchCause(label int, b Candidate) string {
	switch {
	case b.World > 0:
		return fmt.Sprintf("a tensor-parallel rank wrote its own column shard (rank %d of %d): the hidden states were never all-gathered", b.Rank, b.World)
	case label >= 0 && ((b.Kind == CandStream && b.Layer == label-1) || (b.Kind == CandEmbed && label == 0)):
		return "HF output_hidden_states[i] was used for layer i; the output of decoder layer i is output_hidden_states[i+1] (index 0 is the embeddings)"
	case b.Kind == CandEmbed:
		return "the capture holds the embeddings (HF output_hidden_states[0]), not a decoder layer's output"
	case b.Kind == CandStream:
		return fmt.Sprintf("the layers are mislabelled: this is the output of decoder layer %d", b.Layer)
	case b.Kind == CandNormed && b.Last:
		return fmt.Sprintf("HF's last output_hidden_states entry has the final norm applied (it is model.norm's output, not decoder layer %d's); hook model.layers[%d] for the raw layer output", b.Layer, b.Layer)
	case b.Kind == CandNormed:
		return "the final RMSNorm (model.norm) was applied to the captured layer output"
	case b.Kind == CandHidden:
		return "vLLM's decoder layers return (hidden_states, residual) un-summed; only hidden_states (the MLP output) was captured and the residual never added: capture hidden_states + residual"
	case b.Kind == CandResidual:
		return "only the residual half of vLLM's (hidden_states, residual) pair was captured: capture hidden_states + residual"
	}
	return fmt.Sprintf("the capture holds %s %s, not a decoder layer's output", b.Site, b.Tensor)
}
