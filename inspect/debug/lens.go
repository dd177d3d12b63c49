package debug

import (
	"fmt"
	"math"
	"sort"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// Lens applies the final norm and lm_head to the stopped site's stream
// (a decoder layer's output; the embeddings' hidden_states at
// model.embed_tokens) for each sequence's last token of the step, and
// returns its top k tokens with softmax probabilities over the whole
// vocabulary (the logit lens). Each rank computes its vocabulary shard on
// its own device (RMSNorm and Linear, no collective: the ranks are waiting
// at the site) and the shards are joined on the host. Errors:
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
			lw, ok := s.E.Lens(r)
			if !ok && s.E.Remote() {
				return fmt.Errorf("lens: not available with the ranks in worker processes (--workers): the final norm and lm_head live in the workers")
			}
			if !ok {
				return fmt.Errorf("lens: this architecture does not expose its final norm and lm_head")
			}
			vocab = lw.VocabSize
			t, _ := v.Tensor(name)
			if t.T == nil || t.Shard.Kind != model.Replicated {
				return fmt.Errorf("lens: %s at %s is not a replicated device tensor", name, st.ev.Site.Path)
			}
			dev := v.Device
			x := dev.GatherRows(t.T, last)
			y := dev.RMSNorm(x, lw.Norm, lw.Eps)
			lg := dev.Linear(y, lw.Head, nil)
			end := min(lw.Vocab[1], lw.VocabSize)
			if end > lw.Vocab[0] {
				h := dev.ToHost(lg, 0, len(last), 0, end-lw.Vocab[0]).F32()
				w := end - lw.Vocab[0]
				for i := range last {
					for c := range w {
						rows[i] = append(rows[i], float64(h[i*w+c]))
					}
				}
			}
			dev.Free(x)
			dev.Free(y)
			dev.Free(lg)
		}
		rep = &client.LensReport{Site: st.ev.Site.Path, Step: st.ev.Step, Tensor: name}
		for i, row := range rows {
			if len(row) != vocab {
				return fmt.Errorf("internal error: lens row of %d logits, vocab_size %d", len(row), vocab)
			}
			rep.Seqs = append(rep.Seqs, client.LensSeq{Seq: b.Seqs[i], Row: int(last[i]), Top: s.topTokens(row, k)})
		}
		return nil
	})
	return rep, err
}

// topTokens returns the k largest logits of row (ties: lower id first, as
// greedy sampling picks) with their softmax probabilities and texts.
func (s *Session) topTokens(row []float64, k int) []client.LensToken {
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
	sort.SliceStable(idx, func(a, b int) bool { return row[idx[a]] > row[idx[b]] })
	out := []client.LensToken{}
	for _, i := range idx[:min(k, len(idx))] {
		t := client.LensToken{ID: int32(i), Logit: row[i], Prob: math.Exp(row[i]-mx) / z}
		if s.Tok != nil {
			t.Text = s.Tok.Decode([]int32{int32(i)})
		}
		out = append(out, t)
	}
	return out
}
