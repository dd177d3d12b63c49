package check

import (
	"fmt"
	"strings"

	"hsdb/engine/model"
)

// reading is the best explanation of an entry with its score and the
// runner-up's: "stream of layer 0 (cos 1.000000, max|Δ| 0); runner-up:
// embeddings (cos 0.41)". Without explanations it is the plain best match.
func (m EntryMatch) reading() string {
	if m.Condition != "" {
		return m.Condition
	}
	if m.nothing() {
		return m.nothingText()
	}
	if len(m.Explanations) == 0 {
		return fmt.Sprintf("%s (cos %.6f, max|Δ| %.3g)", m.Best, m.BestScore.Cos, m.BestScore.MaxAbs)
	}
	x := m.Explanations[0]
	s := fmt.Sprintf("%s (cos %.6f, max|Δ| %.3g)", x, x.Score.Cos, x.Score.MaxAbs)
	if len(m.Explanations) > 1 {
		y := m.Explanations[1]
		s += fmt.Sprintf("; runner-up: %s (cos %.6f, max|Δ| %.3g)", y, y.Score.Cos, y.Score.MaxAbs)
	}
	return s
}

// nothing reports whether no tensor of the forward pass was compared with
// the entry at all (none has its width): its best is then no reading.
func (m EntryMatch) nothing() bool {
	return m.Condition == "" && len(m.Explanations) == 0 && m.Best == (Candidate{})
}

// nothingText says so in the report's words.
func (m EntryMatch) nothingText() string {
	return fmt.Sprintf("nothing: no tensor of hsdb's forward pass has width %d", m.Width)
}

// bestText is the best explanation in a sentence, or nothingText.
func (m EntryMatch) bestText() string {
	if m.nothing() {
		return m.nothingText()
	}
	return m.best().String()
}

// best returns the entry's best explanation: the first of Explanations,
// or the plain best match.
func (m EntryMatch) best() Explanation {
	if len(m.Explanations) > 0 {
		return m.Explanations[0]
	}
	return Explanation{Cand: m.Best, Scale: 1, Score: m.BestScore, Close: m.Tol.Close(m.BestScore)}
}

// ok reports whether the entry is what it claims, or, unlabelled, a
// decoder layer's stream.
func (m EntryMatch) ok() bool {
	if m.Condition != "" || m.Regathered > 0 {
		return false
	}
	if m.HasClaimed {
		return m.Close
	}
	b := m.best()
	return m.Label < 0 && b.Close && b.Cand.Kind == CandStream && b.Cand.World == 0 && b.Align == AlignNone && !b.scaled()
}

// matchDiagnoses explains entries that are not what their label claims
// (or, unlabelled, not a decoder layer's stream), naming the best
// explanation on values with its score, the runner-up, and the most likely
// cause.
func matchDiagnoses(ms []EntryMatch) []Diagnosis {
	var out []Diagnosis
	swapped := swappedLayers(ms)
	for _, m := range ms {
		if m.Condition != "" {
			continue // the values rule names it
		}
		head := m.Key
		if m.Label >= 0 {
			head = fmt.Sprintf("%s: labelled layer %d", m.Key, m.Label)
		}
		if m.Regathered > 0 {
			if b := m.best(); b.Close {
				out = append(out, Diagnosis{Sentence: fmt.Sprintf("%s: its %d row blocks put side by side match %s", head, m.Regathered, m.reading()),
					Cause: fmt.Sprintf("an all-gather on the wrong dimension: the %d ranks' column shards were concatenated along rows (dim 0) instead of the hidden dimension", m.Regathered)})
				continue
			}
		}
		if m.ok() {
			if m.Label < 0 && m.Stacked > 0 { // say what the per-token rows are once stacked
				out = append(out, Diagnosis{Sentence: fmt.Sprintf("%s (unlabelled) matches %s", m.Key, m.reading())})
			}
			continue
		}
		b := m.best()
		if !b.Close {
			if !m.HasClaimed && m.Label >= 0 && len(m.Explanations) == 0 {
				continue // no candidate of the claimed shape: the shape diagnosis says why
			}
			d := Diagnosis{Sentence: fmt.Sprintf("%s, matches nothing hsdb computes within tolerance under any scale or row alignment tried (closest: %s)", head, m.reading()),
				Cause: "the values differ from hsdb's forward pass: another model or weights, other input_ids, or a numerical problem upstream"}
			if m.HasClaimed {
				d.Sentence = fmt.Sprintf("%s, departs from hsdb's %s (cos %.6f, max|Δ| %.3g, first at token %d) under every scale and row alignment tried; closest: %s",
					head, m.Claimed, m.ClaimedScore.Cos, m.ClaimedScore.MaxAbs, m.FirstBadRow, m.reading())
			}
			out = append(out, d)
			continue
		}
		d := Diagnosis{Sentence: fmt.Sprintf("%s, matches %s", head, m.reading())}
		if m.Label < 0 {
			d.Sentence = fmt.Sprintf("%s (unlabelled) matches %s", m.Key, m.reading())
		}
		d.Cause = explanationCause(m.Label, b)
		if other, ok := swapped[m.Label]; ok {
			d.Cause = fmt.Sprintf("the entries labelled layer %d and layer %d hold each other's layers (swapped labels or a misordered layer list): this is the output of decoder layer %d", m.Label, other, other)
		}
		if c := b.Cand; strings.Contains(m.Key, "speculators id") && b.Align == AlignNone && !b.scaled() && c.Kind == CandStream && c.World == 0 && c.Layer == m.Label+1 {
			d.Cause = fmt.Sprintf("a wrong layer-id convention: the ids are SGLang's (SpecForge: id s = decoder layer s's output), not speculators' (id k = the stream entering layer k = decoder layer k-1's output); this is speculators id %d = SGLang id %d", c.Layer+1, c.Layer)
		}
		out = append(out, d)
	}
	return out
}

// swappedLayers maps the label of each entry that matches, exactly
// (whole width, unscaled, rows aligned), the stream of another captured
// label whose entry in turn matches this one's: two labels exchanged.
func swappedLayers(ms []EntryMatch) map[int]int {
	holds := map[int]int{}
	for _, m := range ms {
		if m.Condition != "" || m.Label < 0 || m.ok() {
			continue
		}
		b := m.best()
		if b.Close && b.Cand.Kind == CandStream && b.Cand.World == 0 && b.Align == AlignNone && !b.scaled() && b.Cand.Layer != m.Label {
			holds[m.Label] = b.Cand.Layer
		}
	}
	out := map[int]int{}
	for a, b := range holds {
		if holds[b] == a {
			if _, ok := holds[b]; ok {
				out[a] = b
			}
		}
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
	return fmt.Sprintf("the capture holds %s %s%s, not a decoder layer's output", b.Site, b.Tensor, siteName(b))
}

// siteName says what a site tensor is in MLA/MoE terms, from its path.
func siteName(c Candidate) string {
	switch {
	case hasSuffix(c.Site, "kv_a_layernorm"):
		return " (MLA's compressed KV c_kv, width kv_lora_rank)"
	case hasSuffix(c.Site, "q_a_layernorm"):
		return " (MLA's compressed query, width q_lora_rank)"
	case hasSuffix(c.Site, "kv_a_proj_with_mqa"):
		return " (c_kv and the RoPE key k_pe, width kv_lora_rank + qk_rope_head_dim)"
	case hasSuffix(c.Site, "gate"):
		return " (the router logits)"
	case hasSuffix(c.Site, "self_attn") || hasSuffix(c.Site, "o_proj"):
		return " (the attention output)"
	case hasSuffix(c.Site, "mlp") || hasSuffix(c.Site, "down_proj"):
		return " (the MLP output)"
	}
	return ""
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// chunkDiagnosis names a chunk boundary without context.
func chunkDiagnosis(r *Report) *Diagnosis {
	if len(r.Chunks) == 0 {
		return nil
	}
	k := r.Chunks[0]
	return &Diagnosis{
		Sentence: fmt.Sprintf("chunk boundary without context at token %s: from token %d the captured rows match hsdb's forward pass restarted at token %d (input_ids[%d:] run as a new sequence), not the sequence run whole",
			joinInts(r.Chunks), k, k, k),
		Cause: "a chunked prefill computed its later chunk without the earlier chunk's KV cache (vLLM #52909, PR #43805); the file's metadata or ids say it is one sequence, so this is not a flattened batch",
	}
}

// moeDiagnosis attributes a first departure at or just after the first
// MoE layer, with the dense layers before it matching, to routing or the
// experts.
func moeDiagnosis(ms []EntryMatch, d *model.Dims) *Diagnosis {
	if d == nil || d.Named["n_routed_experts"] == 0 {
		return nil
	}
	first := d.Named["first_k_dense_replace"]
	dep, ok := Departure(ms)
	if !ok || dep.Label < first {
		return nil
	}
	if dep.best().Close {
		return nil // another tensor of the model's own forward pass explains it: the model's routing computed it
	}
	denseOK, between := false, false
	for _, m := range ms {
		if m.HasClaimed && m.Close && m.Label < first {
			denseOK = true
		}
		if m.HasClaimed && m.Close && m.Label >= first && m.Label < dep.Label {
			between = true
		}
	}
	if !denseOK || between {
		return nil
	}
	return &Diagnosis{
		Sentence: fmt.Sprintf("the first departure is at layer %d, the first MoE layer captured (first_k_dense_replace = %d), while the dense layers before it match", dep.Label, first),
		Cause:    "routing or the experts differ: the router's scoring (sigmoid vs softmax), its e_score_correction_bias, grouped top-k or routed_scaling_factor (TRT-Model-Connect #662); compare the router's top-k at model.layers.N.mlp.gate on these ids (hsdb: break there and print topk_ids)",
	}
}
