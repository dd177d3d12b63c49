package nn

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// VocabParallelEmbedding is one rank's share of vLLM's
// VocabParallelEmbedding: the vocabulary padded to a multiple of 64
// (model.PlanVocab) and split evenly over the ranks, each rank looking up
// the tokens in its rows (zero elsewhere) and an all-reduce summing the
// ranks' partial embeddings.
type VocabParallelEmbedding struct {
	w         backend.Tensor // [vocab_r, hidden], rows past vocab_size zero
	vocab     [2]int         // this rank's range of the padded vocabulary
	vocabSize int
	site      *model.Site
}

// NewVocabParallelEmbedding declares the embedding at b: weight [vocab,
// hidden] split over rows by the padded vocabulary.
func NewVocabParallelEmbedding(b Builder, vocab, hidden int) *VocabParallelEmbedding {
	plan := model.PlanVocab(vocab, b.World())
	mb := b.Module("VocabParallelEmbedding", "partial", "hidden_states")
	e := &VocabParallelEmbedding{vocab: plan.Range(b.Rank()), vocabSize: vocab, site: mb.Site()}
	mb.param(b.path+".weight", []int{vocab, hidden}, 0, plan.Ranges(b.World()))
	if b.loads() {
		e.w = b.l.Rows("weight", []int{vocab, hidden}, e.vocab[0], e.vocab[1])
	}
	return e
}

// Forward returns the embeddings of ids [tokens, hidden], replicated.
func (e *VocabParallelEmbedding) Forward(r *model.Rank, ids []int32) backend.Tensor {
	start := e.vocab[0]
	if _, bad := r.Fault(model.FaultVocabPadding, e.site); bad {
		start = r.Index * ((e.vocabSize + r.World - 1) / r.World) // unpadded offsets over padded rows
	}
	part := r.Dev.Embedding(e.w, ids, start)
	h := r.Comm.AllReduceSum(part)
	r.Leaf(e.site, nil, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "partial", T: part, Shard: Partial}, {Name: "hidden_states", T: h, Shard: Rep, Writable: true}}
	})
	return h
}

// ParallelLMHead is one rank's share of vLLM's ParallelLMHead: the rank's
// rows of the padded vocabulary (the embedding's when the embeddings are
// tied), its logits all-gathered and the padding dropped as vLLM's
// LogitsProcessor does.
type ParallelLMHead struct {
	w         backend.Tensor // [vocab_r, hidden]
	vocab     [2]int
	vocabSize int
	site      *model.Site
}

// NewParallelLMHead declares the LM head at b: weight [vocab, hidden] split
// like the embedding, or the embedding's own weight when tied is not nil
// (tie_word_embeddings; the head then has no parameter of its own).
func NewParallelLMHead(b Builder, vocab, hidden int, tied *VocabParallelEmbedding) *ParallelLMHead {
	plan := model.PlanVocab(vocab, b.World())
	mb := b.Module("ParallelLMHead", "input", "logits")
	h := &ParallelLMHead{vocab: plan.Range(b.Rank()), vocabSize: vocab, site: mb.Site()}
	switch {
	case tied != nil:
		h.w = tied.w
	default:
		mb.param(b.path+".weight", []int{vocab, hidden}, 0, plan.Ranges(b.World()))
		if b.loads() {
			h.w = b.l.Rows("weight", []int{vocab, hidden}, h.vocab[0], h.vocab[1])
		}
	}
	return h
}

// Forward returns the logits [rows, vocab_size] of x [rows, hidden]
// (replicated), gathered over the ranks, and emits the site.
func (h *ParallelLMHead) Forward(r *model.Rank, x backend.Tensor) backend.Tensor {
	dev := r.Dev
	logits := dev.Linear(x, h.w, nil)
	r.Leaf(h.site, x, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: Rep}, logitsShard(dev, logits, h.vocab, h.vocabSize)}
	})
	full := r.Comm.AllGatherCols(logits)
	if model.PlanVocab(h.vocabSize, r.World).Padded != h.vocabSize {
		full = dev.SliceCols(full, 0, h.vocabSize)
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
