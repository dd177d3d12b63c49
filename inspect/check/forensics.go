package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// widthPriority orders config sizes when several equal the same number:
// the ones a wrong capture most often holds come first.
var widthPriority = []string{"hidden_size", "kv_lora_rank", "q_lora_rank", "kv_lora_rank+qk_rope_head_dim",
	"num_attention_heads*head_dim", "num_key_value_heads*head_dim", "num_attention_heads*qk_head_dim",
	"num_attention_heads*v_head_dim", "intermediate_size", "moe_intermediate_size", "vocab_size", "head_dim",
	"qk_head_dim", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}

// isWidthName reports whether a config field is a width (a size a tensor's
// last dimension can have) rather than a count or a setting.
func isWidthName(n string) bool {
	return strings.Contains(n, "size") || strings.Contains(n, "dim") || strings.Contains(n, "lora_rank") ||
		strings.ContainsAny(n, "*+")
}

// widthNames returns the config widths in priority order.
func widthNames(named map[string]int) []string {
	rank := map[string]int{}
	for i, n := range widthPriority {
		rank[n] = i
	}
	var out []string
	for n := range named {
		if isWidthName(n) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ri, iok := rank[out[i]]
		rj, jok := rank[out[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return out[i] < out[j]
	})
	return out
}

// shardableNames are the widths tensor parallelism splits (vLLM's
// column-parallel outputs and a hidden state sharded by a missing gather).
var shardableNames = []string{"hidden_size", "intermediate_size", "moe_intermediate_size", "num_attention_heads*head_dim",
	"num_key_value_heads*head_dim", "num_attention_heads*qk_head_dim", "num_attention_heads*v_head_dim", "vocab_size"}

// ExplainWidth lists the ways size w reads in the model's terms, most
// likely first: config widths it equals ("kv_lora_rank"), and widths it
// equals divided by a tensor-parallel world size ("hidden_size / 2"). With
// tp > 1 only that world size is tried, after the exact sizes; with tp 0,
// shard readings (over 2, 4, 8 and 16) are tried only when no config size
// equals w exactly, since several splits of several sizes often coincide.
func ExplainWidth(w int, named map[string]int, tp int) []string {
	var out []string
	for _, n := range widthNames(named) {
		if named[n] == w {
			out = append(out, n)
		}
	}
	if len(out) > 0 && tp <= 1 {
		return out // an exact size explains it; shard readings would be coincidences
	}
	tps := []int{2, 4, 8, 16}
	if tp > 1 {
		tps = []int{tp}
	}
	for _, n := range shardableNames {
		v := named[n]
		for _, t := range tps {
			if v > 0 && v%t == 0 && v/t == w {
				out = append(out, fmt.Sprintf("%s / %d", n, t))
			}
		}
	}
	return out
}

// shardOf returns the world size t for which w = hidden/t (the first of
// the candidates), or 0.
func shardOf(w, hidden, tp int) int {
	tps := []int{2, 4, 8, 16}
	if tp > 1 {
		tps = []int{tp}
	}
	for _, t := range tps {
		if hidden%t == 0 && hidden/t == w {
			return t
		}
	}
	return 0
}

// shapeFacts is what shape forensics knows about one file.
type shapeFacts struct {
	entries []Entry
	idsLen  int   // len(input_ids), -1 unknown
	seqLens []int // known sequence lengths (more than one: a flattened batch)
	hidden  int   // hidden_size, 0 unknown
	layers  int   // requested layer count, 0 unknown
	tp      int
	named   map[string]int
	// model says a forward pass was available: widths are then read from
	// the values (matches), never from arithmetic alone.
	model   bool
	matches []EntryMatch
	// both is set by widthClause when, without a model, the width reads
	// both as a config size and as a rank's shard of hidden_size.
	both string
}

// Diagnosis is one finding of check, in the model's terms: what was found
// (Sentence, e.g. "771 tensors of [512]: 771 = 512 + 259 (tokens of
// sequences 0 and 1, flattened); 512 = kv_lora_rank, not hidden_size 7168;
// expected 4 tensors of [seq_len, 7168]") and the most likely cause in one
// sentence.
type Diagnosis struct {
	Sentence string
	Cause    string
}

// seqSum renders "512 + 259 (tokens of sequences 0 and 1, flattened)".
func seqSum(lens []int) string {
	parts := make([]string, len(lens))
	for i, n := range lens {
		parts[i] = fmt.Sprint(n)
	}
	which := fmt.Sprintf("sequences 0..%d", len(lens)-1)
	if len(lens) == 2 {
		which = "sequences 0 and 1"
	}
	if len(lens) > 8 {
		return fmt.Sprintf("the sum of %d sequence lengths (tokens of %s, flattened)", len(lens), which)
	}
	return strings.Join(parts, " + ") + " (tokens of " + which + ", flattened)"
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// widthClause explains a width that is not hidden_size. With a model the
// values decide (the best explanation of the first entry compared): a
// shard reading only when a shard matched, a config size named with the
// site whose values it holds. Without one every reading of the width is
// listed (a config size first) and the clause says it rests on shapes.
func (f *shapeFacts) widthClause(w int) (clause, what string, shard int) {
	ex := ExplainWidth(w, f.named, f.tp)
	hid := ""
	if f.hidden > 0 {
		hid = fmt.Sprintf(", not hidden_size %d", f.hidden)
	}
	sh := 0
	if f.hidden > 0 {
		sh = shardOf(w, f.hidden, f.tp)
	}
	var exact []string
	for _, n := range ex {
		if !strings.Contains(n, " / ") {
			exact = append(exact, n)
		}
	}
	if len(exact) > 0 {
		what = exact[0]
	}
	if f.model && len(f.matches) > 0 {
		m := f.matches[0]
		b := m.best()
		names := w2s(w)
		if len(exact) > 0 {
			names = fmt.Sprintf("%d = %s", w, strings.Join(exact, " = "))
		}
		switch {
		case m.Condition != "":
			return fmt.Sprintf("%s%s (the values hold %s)", names, hid, m.Condition), what, 0
		case b.Close && b.Cand.World > 0 && (b.Cand.Kind != CandSite):
			return fmt.Sprintf("%d = hidden_size / %d (one rank's column shard at tp %d, measured: cos %.6f)%s", w, b.Cand.World, b.Cand.World, b.Score.Cos, hid), "", b.Cand.World
		case b.Close:
			return fmt.Sprintf("%s%s (measured: the values are %s, cos %.6f)", names, hid, b, b.Score.Cos), what, 0
		case m.nothing():
			return fmt.Sprintf("%s%s (%s)", names, hid, m.nothingText()), what, 0
		default:
			return fmt.Sprintf("%s%s (no reading matches the values: closest %s, cos %.6f)", names, hid, b, b.Score.Cos), what, 0
		}
	}
	if len(ex) == 0 && sh == 0 {
		return fmt.Sprintf("%d matches no size of the config%s", w, hid), "", 0
	}
	switch {
	case sh > 0 && len(exact) > 0:
		f.both = exact[0]
		return fmt.Sprintf("%d = %s = hidden_size / %d (one rank's column shard at tp %d)%s", w, strings.Join(exact, " = "), sh, sh, hid), what, 0
	case sh > 0:
		return fmt.Sprintf("%d = hidden_size / %d (one rank's column shard at tp %d)%s", w, sh, sh, hid), "", sh
	}
	return fmt.Sprintf("%d = %s%s", w, strings.Join(ex, " = "), hid), ex[0], 0
}

func w2s(w int) string { return fmt.Sprint(w) }

// shapeOnly is the note a diagnosis from shapes alone ends with.
func (f *shapeFacts) shapeOnly() string {
	if f.model {
		return ""
	}
	if f.both != "" {
		return fmt.Sprintf("; a reading from shapes alone (no model ran): %s and a rank's shard of hidden_size have this width, the values would decide", f.both)
	}
	return "; a reading from shapes alone (no model ran)"
}

// diagnoseShapes explains entries whose shapes are not [len, hidden], or
// that hold several sequences. It returns nil when the shapes are right.
func diagnoseShapes(f *shapeFacts) *Diagnosis {
	if len(f.entries) == 0 {
		return nil
	}
	shape := f.entries[0].T.Shape
	for _, e := range f.entries[1:] {
		if !slices.Equal(e.T.Shape, shape) {
			var ss []string
			for _, e := range f.entries {
				ss = append(ss, e.Key+" "+tensor.ShapeString(e.T.Shape))
			}
			return &Diagnosis{Sentence: "entries have different shapes: " + strings.Join(ss, ", "),
				Cause: "entries of one file should all be [seq_len, hidden_size]; these were cut from different tensors"}
		}
	}
	n := len(f.entries)
	flat := len(f.seqLens) > 1
	H := "hidden_size"
	if f.hidden > 0 {
		H = fmt.Sprint(f.hidden)
	}
	expect := func() string {
		k := "one tensor"
		if f.layers > 0 {
			k = fmt.Sprintf("%d tensor%s", f.layers, plural(f.layers))
		} else if len(shape) == 2 {
			k = fmt.Sprintf("%d tensor%s", n, plural(n))
		}
		s := fmt.Sprintf("expected %s of [seq_len, %s]", k, H)
		if f.layers <= 0 && len(shape) != 2 {
			s += " per layer"
		}
		if flat {
			s += " per sequence"
		}
		return s
	}
	ratio := func() string {
		K := f.layers
		if K <= 0 && len(shape) == 2 {
			K = n
		}
		tokens := f.idsLen
		if flat {
			tokens = sum(f.seqLens)
		}
		if K <= 0 || tokens <= 0 || f.hidden <= 0 {
			return ""
		}
		found := n * tensor.Numel(shape)
		want := K * tokens * f.hidden
		if found == want {
			return ""
		}
		return fmt.Sprintf(" (found %d elements, expected %d: ratio %.3g)", found, want, float64(found)/float64(want))
	}
	switch len(shape) {
	case 1:
		w := shape[0]
		var parts []string
		switch {
		case flat && sum(f.seqLens) == n:
			parts = append(parts, fmt.Sprintf("%d = %s", n, seqSum(f.seqLens)))
		case n == f.idsLen:
			parts = append(parts, fmt.Sprintf("%d = len(input_ids) (one tensor per token)", n))
		}
		var what string
		var shard int
		if f.hidden > 0 && w == f.hidden {
			parts = append(parts, fmt.Sprintf("%d = hidden_size", w))
		} else {
			var c string
			c, what, shard = f.widthClause(w)
			parts = append(parts, c)
		}
		d := &Diagnosis{Sentence: fmt.Sprintf("%d tensors of [%d]: %s; %s%s%s", n, w, strings.Join(parts, "; "), expect(), ratio(), f.shapeOnly())}
		split := ""
		if flat {
			split = fmt.Sprintf(", of a flattened batch (split it per sequence by seq_lens [%s])", joinIntsSep(f.seqLens, ", "))
		}
		switch {
		case f.hidden > 0 && w == f.hidden:
			d.Cause = "the rows of one layer were written one tensor per token" + split + "; stack them into one [seq_len, hidden_size] tensor per layer"
		case shard > 0:
			d.Cause = fmt.Sprintf("one tensor per token of a rank's column shard was written%s: the hidden states were never all-gathered over the %d ranks nor stacked per layer", split, shard)
		case f.both != "":
			d.Cause = fmt.Sprintf("either the hook captured a per-token tensor of width %d%s or one rank's column shard, written one tensor per token%s; give --model to tell them apart by value",
				w, latentName(what), split)
		default:
			d.Cause = fmt.Sprintf("the hook captured a per-token tensor of width %d%s instead of the decoder-layer output and wrote one tensor per token%s; capture model.layers.{i} (hidden_states + residual) as [seq_len, hidden_size]",
				w, latentName(what), split)
		}
		return d
	case 2:
		r, w := shape[0], shape[1]
		rowsBad := flat && r == sum(f.seqLens)
		rowsOther := !flat && f.idsLen >= 0 && r != f.idsLen
		widthBad := f.hidden > 0 && w != f.hidden
		if !rowsBad && !rowsOther && !widthBad {
			return nil
		}
		if k := wrongDimGather(r, w, f.idsLen, f.hidden); k > 0 {
			return &Diagnosis{Sentence: fmt.Sprintf("%d tensor%s of [%d, %d]: %d rows = %d × len(input_ids) %d and %d = hidden_size / %d: the column shards of %d ranks stacked along rows; %s%s",
				n, plural(n), r, w, r, k, f.idsLen, w, k, k, expect(), f.shapeOnly()),
				Cause: fmt.Sprintf("the hidden states were all-gathered along the wrong dimension (torch.cat(shards, dim=0)): concatenate the %d tensor-parallel shards along the hidden dimension", k)}
		}
		var parts []string
		if rowsBad {
			parts = append(parts, fmt.Sprintf("%d = %s", r, seqSum(f.seqLens)))
		}
		if rowsOther {
			parts = append(parts, fmt.Sprintf("%d rows but len(input_ids) = %d", r, f.idsLen))
		}
		var what string
		var shard int
		if widthBad {
			var c string
			c, what, shard = f.widthClause(w)
			parts = append(parts, c)
		}
		d := &Diagnosis{Sentence: fmt.Sprintf("%d tensor%s of [%d, %d]: %s; %s%s%s", n, plural(n), r, w, strings.Join(parts, "; "), expect(), ratio(), f.shapeOnly())}
		var causes []string
		if rowsBad {
			causes = append(causes, fmt.Sprintf("the flattened token batch (vLLM's [tokens, hidden] layout) was written as one sequence; split it by seq_lens [%s]", joinIntsSep(f.seqLens, ", ")))
		}
		if rowsOther {
			causes = append(causes, "the hidden states and input_ids come from different token batches")
		}
		switch {
		case shard > 0:
			causes = append(causes, fmt.Sprintf("a tensor-parallel rank wrote its own column shard: the hidden states were never all-gathered over the %d ranks", shard))
		case widthBad && f.both != "":
			causes = append(causes, fmt.Sprintf("the capture holds a tensor of width %d%s or one rank's column shard; give --model to tell them apart by value", w, latentName(what)))
		case widthBad:
			causes = append(causes, fmt.Sprintf("the capture holds a tensor of width %d%s, not the decoder-layer output (hidden_size %d)", w, latentName(what), f.hidden))
		}
		d.Cause = strings.Join(causes, "; and ")
		return d
	}
	return &Diagnosis{Sentence: fmt.Sprintf("%d tensor%s of %s: %s", n, plural(n), tensor.ShapeString(shape), expect()),
		Cause: "each captured layer should be one 2-D [seq_len, hidden_size] tensor per sequence"}
}

// latentName describes a config width for the cause sentence.
func latentName(name string) string {
	switch name {
	case "":
		return ""
	case "kv_lora_rank":
		return " (kv_lora_rank: MLA's compressed KV c_kv)"
	case "q_lora_rank":
		return " (q_lora_rank: MLA's compressed query)"
	case "kv_lora_rank+qk_rope_head_dim":
		return " (kv_a_proj_with_mqa's output: c_kv and the RoPE key)"
	}
	return " (" + name + ")"
}

// plural is the ending of a regular noun counted n: "" for 1, else "s".
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// hiddenOf returns the model's hidden size, or 0.
func hiddenOf(d *model.Dims) int {
	if d == nil {
		return 0
	}
	return d.Hidden
}

// wrongDimGather returns k when rows r = k·ids and width w = hidden / k
// for some k ≥ 2: k column shards concatenated along rows. 0 otherwise.
func wrongDimGather(r, w, ids, hidden int) int {
	if ids <= 0 || hidden <= 0 || w <= 0 || r%ids != 0 {
		return 0
	}
	if k := r / ids; k >= 2 && w*k == hidden {
		return k
	}
	return 0
}
