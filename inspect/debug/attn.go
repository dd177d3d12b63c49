package debug

import (
	"fmt"
	"math"

	"hsdb/engine/model"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
	"hsdb/inspect/stats"
)

// AttnProbs recomputes the attention probabilities of query head head
// (0 <= head < num_attention_heads) for sequence seq of the batch at the
// stopped attention site, from the site's q and k on a rank that holds the
// head: softmax(q·kᵀ·scale) in float64 over the causal keys of the same
// sequence (the sliding window's last keys when the layer has one), head h
// reading kv head h / (heads/kv_heads) as HF's repeat_kv; for MLA, q and k
// are the per-head [nope | rope] vectors and the scale includes YaRN's
// mscale² (model.AttnGeometry). The keys are the step's own rows, so the
// sequence must start at position 0 in this step (the prefill). seq -1
// means the only sequence. Errors: ErrNotStopped, a site without
// attention, ErrHead, a bad sequence.
func (s *Session) AttnProbs(head, seq int) (*client.AttnReport, error) {
	var rep *client.AttnReport
	err := s.at(func(st *stopCtx) (err error) {
		rep, err = attnProbs(st, head, seq)
		return err
	})
	return rep, err
}

// attnProbs computes AttnProbs at st.
func attnProbs(st *stopCtx, head, seq int) (rep *client.AttnReport, err error) {
	err = func() error {
		var q model.SiteTensor
		for _, t := range st.views[0].Tensors {
			if t.Attn != nil {
				q = t
			}
		}
		if q.Attn == nil {
			return fmt.Errorf("attn_probs: %s computes no attention: stop at an attention site: layers.N.self_attn.attn; with multi-head or grouped-query attention (Llama, Qwen, Mistral) also layers.N.self_attn.rotary_emb; with MLA (DeepSeek, Kimi) also layers.N.self_attn", st.ev.Site.Path)
		}
		g := q.Attn
		if head < 0 || head >= g.TotalHeads {
			return fmt.Errorf("attn_probs --head %d: %w: the model has %d attention heads (0-%d)", head, client.ErrHead, g.TotalHeads, g.TotalHeads-1)
		}
		b := st.ev.Batch
		if seq < 0 {
			if len(b.SeqLens) > 1 {
				return fmt.Errorf("attn_probs: the batch has %d sequences: give --seq S", len(b.SeqLens))
			}
			seq = 0
		}
		if seq >= len(b.SeqLens) {
			return fmt.Errorf("attn_probs --seq %d: the batch has %s", seq, plural.N(len(b.SeqLens), "sequence"))
		}
		r0, n := b.SeqStart(seq), b.SeqLens[seq]
		if b.Pos[r0] != 0 {
			return fmt.Errorf("attn_probs: sequence %d starts at position %d in step %d: the keys of earlier steps are in the KV cache, not at this site; look at the prefill (step 0)", seq, b.Pos[r0], st.ev.Step)
		}
		rep = &client.AttnReport{Site: st.ev.Site.Path, Step: st.ev.Step, Head: head, Heads: g.TotalHeads, Rank: -1, Seq: seq,
			Scale: float64(g.Scale), Window: g.Window, Probs: [][]float64{}, RowSums: []float64{}}
		group := g.TotalHeads / g.TotalKVHeads
		rep.KVHead = head / group
		for _, v := range st.views {
			qt, _ := v.Tensor(q.Name)
			a := qt.Attn
			if head >= a.FirstHead && head < a.FirstHead+a.Heads {
				rep.Ranks = append(rep.Ranks, v.Rank)
				if rep.Rank < 0 {
					rep.Rank = v.Rank
				}
			}
		}
		v := st.views[rep.Rank]
		qt, _ := v.Tensor(q.Name)
		kt, ok := v.Tensor(qt.Attn.Key)
		a := qt.Attn
		kh := rep.KVHead - a.FirstKVHead
		if !ok || kh < 0 || kh >= a.KVHeads {
			return fmt.Errorf("internal error: rank %d holds query head %d but not its kv head %d", rep.Rank, head, rep.KVHead)
		}
		hq := head - a.FirstHead
		qh := toHost(v, qt, r0, r0+n, hq*a.DK, (hq+1)*a.DK).F32()
		kk := toHost(v, kt, r0, r0+n, kh*a.DK, (kh+1)*a.DK).F32()
		d := a.DK
		for i := range n {
			row := make([]float64, n)
			lo := 0
			if a.Window > 0 {
				lo = max(0, i-a.Window+1)
			}
			mx := math.Inf(-1)
			for j := lo; j <= i; j++ {
				dot := 0.0
				for c := range d {
					dot += float64(qh[i*d+c]) * float64(kk[j*d+c])
				}
				row[j] = dot * float64(a.Scale)
				mx = math.Max(mx, row[j])
			}
			z := 0.0
			for j := lo; j <= i; j++ {
				row[j] = math.Exp(row[j] - mx)
				z += row[j]
			}
			sum := 0.0
			for j := lo; j <= i; j++ {
				row[j] /= z
				sum += row[j]
			}
			rep.Probs = append(rep.Probs, row)
			rep.RowSums = append(rep.RowSums, sum)
		}
		return nil
	}()
	return rep, err
}

// attnValues returns the attended entries of rep (key j of query i within
// the causal window), row by row, for hist.
func attnValues(rep *client.AttnReport) []float32 {
	var out []float32
	for i, row := range rep.Probs {
		lo := 0
		if rep.Window > 0 {
			lo = max(0, i-rep.Window+1)
		}
		for j := lo; j <= i; j++ {
			out = append(out, float32(row[j]))
		}
	}
	return out
}

// attnSource labels an attention report as hist and top name their source.
func attnSource(rep *client.AttnReport) string {
	return fmt.Sprintf("head %d of %d (kv head %d) on rank %d, seq %d", rep.Head, rep.Heads, rep.KVHead, rep.Rank, rep.Seq)
}

// AttnProbsName is the name hist and top accept for the attention
// probabilities of one head (Slice.Head) at an attention site.
const AttnProbsName = "attn_probs"

// attnSlice computes the attention report hist and top look at: head
// sl.Head (required), sequence sl.Seq; --rank and --tokens do not apply.
func attnSlice(st *stopCtx, sl client.Slice) (*client.AttnReport, error) {
	if sl.Head == nil {
		return nil, fmt.Errorf("attn_probs: which head? give --head H")
	}
	if sl.Rank >= 0 || sl.Tokens != nil {
		return nil, fmt.Errorf("attn_probs: only --head H and --seq S apply (the head's rank is found)")
	}
	return attnProbs(st, *sl.Head, sl.Seq)
}

// attnTop is top over one head's probabilities: channels are key
// positions, rows query tokens of the sequence.
func attnTop(st *stopCtx, sl client.Slice, k int, rep **client.TopReport) error {
	a, err := attnSlice(st, sl)
	if err != nil {
		return err
	}
	n := len(a.Probs)
	v := make([]float32, 0, n*n)
	for _, row := range a.Probs {
		for _, x := range row {
			v = append(v, float32(x))
		}
	}
	b := st.ev.Batch
	r0 := b.SeqStart(a.Seq)
	r := &client.TopReport{Site: st.ev.Site.Path, Tensor: AttnProbsName, Step: st.ev.Step, Source: attnSource(a)}
	med, ok := stats.MedianAbs(attnValues(a))
	if ok {
		r.MedianAb = &med
	}
	for _, c := range stats.TopChannels(v, n, n, k, 0) {
		c.Ratio = nil // against the attended entries' median, not the masked zeros'
		if med > 0 {
			x := math.Abs(c.Value) / med
			c.Ratio = &x
		}
		r.Channels = append(r.Channels, client.TopEntry{Channel: c, Token: r0 + c.Row, Seq: b.Seqs[a.Seq], Pos: c.Row})
	}
	*rep = r
	return nil
}
