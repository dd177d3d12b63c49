package debug

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/client"
)

// Lens applies the final norm and lm_head to the stopped site's stream
// (a decoder layer's output; the embeddings' hidden_states at
// model.embed_tokens) for each sequence's last token of the step, and
// returns its top k tokens with softmax probabilities over the whole
// vocabulary (the logit lens). Each rank computes its vocabulary shard on
// its own device (RMSNorm and Linear, no collective: the ranks are waiting
// at the site; a rank worker in its process, model.LensDevice) and the
// shards are joined on the host in rank order. Errors:
// ErrNotStopped, a site without a stream, k < 1.
func (s *Session) Lens(k int) (*client.LensReport, error) {
	if k < 1 {
		return nil, fmt.Errorf("lens: K %d: want at least 1", k)
	}
	var rep *client.LensReport
	err := s.at(func(st *stopCtx) error {
		name := "stream"
		if _, ok := st.views[0].Tensor(name); !ok {
			name = "hidden_states"
			if st.ev.Site.Path != "model.embed_tokens" {
				return fmt.Errorf("lens: %s shows no stream: stop at a decoder layer (model.layers.N) or model.embed_tokens", st.ev.Site.Path)
			}
		}
		b := st.ev.Batch
		var last []int32
		for sq, n := range b.SeqLens {
			last = append(last, int32(b.SeqStart(sq)+n-1))
		}
		rows := make([][]float64, len(last))
		vocab := 0
		for r, v := range st.views {
			t, _ := v.Tensor(name)
			if t.T == nil || t.Shard.Kind != model.Replicated {
				return fmt.Errorf("lens: %s at %s is not a replicated device tensor", name, st.ev.Site.Path)
			}
			var h *tensor.Tensor
			var lo int
			if ld, ok := v.Device.(model.LensDevice); ok { // a rank worker: its final norm and head live there
				h, lo, vocab = ld.LensLogits(t.T, last)
			} else {
				lw, ok := s.E.Lens(r)
				if !ok {
					return fmt.Errorf("lens: this architecture does not expose its final norm and lm_head")
				}
				vocab = lw.VocabSize
				h, lo = model.LensLogits(v.Device, lw, t.T, last)
			}
			if h == nil {
				continue
			}
			if h.DType != tensor.F32 || len(h.Shape) != 2 || h.Shape[0] != len(last) || lo+h.Shape[1] > vocab {
				return fmt.Errorf("internal error: rank %d's lens logits %s %v from token %d, vocab_size %d", r, h.DType, h.Shape, lo, vocab)
			}
			w, f := h.Shape[1], h.F32()
			for i := range last {
				for c := range w {
					rows[i] = append(rows[i], float64(f[i*w+c]))
				}
			}
		}
		rep = &client.LensReport{Site: st.ev.Site.Path, Step: st.ev.Step, Tensor: name, Notes: lensDiverged(st, name, last)}
		for i, row := range rows {
			if len(row) != vocab {
				return fmt.Errorf("internal error: lens row of %d logits, vocab_size %d", len(row), vocab)
			}
			rep.Seqs = append(rep.Seqs, client.LensSeq{Seq: b.Seqs[i], Row: int(last[i]), Top: s.topTokens(row, k, b.IDs[last[i]])})
			nan := 0
			for _, v := range row {
				if math.IsNaN(v) {
					nan++
				}
			}
			if nan > 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("seq %d: %d of %d logits are NaN, ranked first as torch.topk ranks them; the softmax is NaN throughout (break ... if nan finds where they start)", b.Seqs[i], nan, vocab))
			}
		}
		return nil
	})
	return rep, err
}

// topTokens returns the k largest logits of row (ties: lower id first, as
// greedy sampling picks) with their softmax probabilities and texts, each
// as it would follow prev, the row's token (pieceText).
func (s *Session) topTokens(row []float64, k int, prev int32) []client.LensToken {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = math.Max(mx, v)
	}
	z := 0.0
	for _, v := range row {
		z += math.Exp(v - mx)
	}
	idx := make([]int, len(row))
	for i := range idx {
		idx[i] = i
	}
	// NaN ranks above every number, as torch.topk ranks it: a comparison
	// with NaN is false both ways, which left the order (and the top k
	// finite logits) undefined when some logits were NaN.
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := row[idx[a]], row[idx[b]]
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) && !math.IsNaN(y)
		}
		return x > y
	})
	out := []client.LensToken{}
	for _, i := range idx[:min(k, len(idx))] {
		t := client.LensToken{ID: int32(i), Logit: row[i], Prob: math.Exp(row[i]-mx) / z}
		if s.Tok != nil {
			t.Text = s.pieceText(prev, []int32{int32(i)})
		}
		out = append(out, t)
	}
	return out
}

// pieceText is the text of ids as they follow token prev, concatenated as
// a streaming generator prints them: tokenizer.DecodePiece, what `hsdb
// generate` prints and llama2.c run.c's decode(prev, id). A token keeps
// its leading space unless prev is BOS, so a predicted " time" reads
// " time" and a space token " ", not "time" and "" as Decode of the token
// alone gives (Decode takes its first token as a text's first word). ""
// without a tokenizer.
func (s *Session) pieceText(prev int32, ids []int32) string {
	if s.Tok == nil {
		return ""
	}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(s.Tok.DecodePiece(prev, id))
		prev = id
	}
	return b.String()
}

// lensDiverged compares every rank's copy of the replicated tensor name in
// the rows the lens reads with rank 0's: where they differ, each rank's
// vocabulary shard was computed from its own copy (as vLLM's lm_head does
// on every rank), so the joined logits mix the copies. One note per rank
// that differs, with its largest |Δ|; none when they agree (NaN at the
// same place included: a NaN in one copy only counts as a difference).
func lensDiverged(st *stopCtx, name string, last []int32) []string {
	var notes []string
	var ref [][]float32
	for r, v := range st.views {
		t, _ := v.Tensor(name)
		n := cols(t)
		worst, differ := 0.0, false
		for i, row := range last {
			h := v.Device.ToHost(t.T, int(row), int(row)+1, 0, n).F32()
			if r == 0 {
				ref = append(ref, h)
				continue
			}
			for c, x := range h {
				a, b := float64(ref[i][c]), float64(x)
				if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
					continue
				}
				differ = true
				if d := math.Abs(a - b); d > worst || math.IsNaN(d) {
					worst = d
				}
			}
		}
		if differ {
			notes = append(notes, fmt.Sprintf("rank %d's %s differs from rank 0's in the rows read (max |Δ| %.4g): each rank's vocabulary shard of the logits comes from its own copy, as vLLM's lm_head computes it; `ranks %s` shows where", r, name, worst, name))
		}
	}
	return notes
}
