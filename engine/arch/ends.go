package arch

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// ends is what every decoder-only model here shares around its decoder
// layers on one rank: the vocab-parallel embedding (vLLM
// VocabParallelEmbedding: a masked lookup in the rank's rows, then an
// all-reduce), the final RMSNorm, and the vocab-parallel LM head
// (ParallelLMHead, its logits all-gathered and the vocab padding dropped as
// vLLM's LogitsProcessor does).
type ends struct {
	embed, head, norm                        backend.Tensor // [vocab_r, hidden], [vocab_r, hidden] (embed when tied), [hidden]
	vocab                                    [2]int         // this rank's range of the padded vocabulary
	vocabSize                                int
	eps                                      float32
	siteEmbed, siteModel, siteNorm, siteHead *model.Site
}

// loadEnds reads the embedding (modelPrefix.embed_tokens.weight), the final
// norm (modelPrefix.norm.weight) and, unless tied, the head (headName, under
// no prefix) for l.Rank. lm is l with the model prefix pushed.
func loadEnds(l, lm *model.Loader, t *model.Tree, headName string, vocabSize, hidden int, tied bool, eps float64) ends {
	v := model.PlanVocab(vocabSize, l.World)
	e := ends{vocab: v.Range(l.Rank), vocabSize: vocabSize, eps: float32(eps),
		siteEmbed: t.Site("model.embed_tokens"), siteModel: t.Site("model"), siteNorm: t.Site("model.norm"), siteHead: t.Site("lm_head")}
	e.embed = lm.Rows("embed_tokens.weight", []int{vocabSize, hidden}, e.vocab[0], e.vocab[1])
	if tied {
		e.head = e.embed
	} else {
		e.head = l.Rows(headName, []int{vocabSize, hidden}, e.vocab[0], e.vocab[1])
	}
	e.norm = lm.Full("norm.weight", hidden)
	return e
}

// embedTokens enters the model's site and returns the embeddings of b's
// tokens [tokens, hidden], replicated.
func (e *ends) embedTokens(r *model.Rank, b *model.Batch) backend.Tensor {
	r.Enter(e.siteModel)
	part := r.Dev.Embedding(e.embed, b.IDs, e.vocab[0])
	h := r.Comm.AllReduceSum(part)
	r.Leaf(e.siteEmbed, nil, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "partial", T: part, Shard: partial}, {Name: "hidden_states", T: h, Shard: rep(h)}}
	})
	return h
}

// runLayers runs n decoder layers on the un-summed pair (h, residual =
// nil), each in its own device scope so that device memory holds one
// layer's activations, freeing each layer's input pair once the next exists.
func runLayers(dev backend.Device, h backend.Tensor, n int, layer func(i int, h, res backend.Tensor) (backend.Tensor, backend.Tensor)) (backend.Tensor, backend.Tensor) {
	var res backend.Tensor
	for i := range n {
		dev.PushScope()
		h2, res2 := layer(i, h, res)
		dev.PopScope(h2, res2)
		dev.Free(h)
		if res != nil && res != h {
			dev.Free(res)
		}
		h, res = h2, res2
	}
	return h, res
}

// logits applies the final norm to the pair (h, res) (res nil when no layer
// ran), leaves the model's site, and returns the logits of b.LogitRows()
// gathered over ranks, [rows, vocab_size].
func (e *ends) logits(r *model.Rank, b *model.Batch, h, res backend.Tensor) backend.Tensor {
	dev := r.Dev
	r.Enter(e.siteNorm, h, res)
	var normed backend.Tensor
	if res == nil {
		normed = dev.RMSNorm(h, e.norm, e.eps)
	} else {
		normed, _ = dev.AddRMSNorm(h, res, e.norm, e.eps)
	}
	r.Exit(e.siteNorm, func() []model.SiteTensor {
		ts := []model.SiteTensor{{Name: "input", T: h, Shard: rep(h)}}
		if res != nil {
			ts = append(ts, model.SiteTensor{Name: "input_residual", T: res, Shard: rep(res)})
		}
		return append(ts, model.SiteTensor{Name: "hidden_states", T: normed, Shard: rep(normed)})
	})
	r.Exit(e.siteModel, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "hidden_states", T: normed, Shard: rep(normed)}}
	})
	rows := b.LogitRows()
	x := normed
	if len(rows) != b.Tokens() {
		x = dev.GatherRows(normed, rows)
	}
	logits := dev.Linear(x, e.head, nil)
	r.Leaf(e.siteHead, x, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, logitsShard(dev, logits, e.vocab, e.vocabSize)}
	})
	full := r.Comm.AllGatherCols(logits)
	if model.PlanVocab(e.vocabSize, r.World).Padded != e.vocabSize {
		full = dev.SliceCols(full, 0, e.vocabSize)
	}
	return full
}

// logitsShard is a rank's lm_head output as the site shows it: its columns
// of the real vocabulary only. vLLM pads the vocabulary to a multiple of 64
// before splitting it (VocabParallelEmbedding), so a rank's padded range
// [r0, r1) may run past vocab_size; the padding columns are dropped here, as
// vLLM's LogitsProcessor drops them, so that statistics see only real
// tokens. A rank that holds only padding shows [tokens, 0].
func logitsShard(dev backend.Device, logits backend.Tensor, r [2]int, vocab int) model.SiteTensor {
	end := min(r[1], vocab)
	start := min(r[0], end)
	sh := model.Sharding{Kind: model.Sharded, Start: start, End: end, Full: vocab}
	rows := logits.Shape()[0]
	switch {
	case end-start == r[1]-r[0]:
		return model.SiteTensor{Name: "logits", T: logits, Shard: sh}
	case end == start:
		return model.SiteTensor{Name: "logits", Host: tensor.New(tensor.F32, rows, 0), Shard: sh}
	}
	return model.SiteTensor{Name: "logits", T: dev.SliceCols(logits, 0, end-start), Shard: sh}
}
