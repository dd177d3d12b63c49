package nn

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// Block is the attention or the MLP of a decoder layer: it maps x [tokens,
// hidden] (replicated) to [tokens, hidden] (replicated), emitting its own
// sites.
type Block interface {
	Forward(r *model.Rank, b *model.Batch, x backend.Tensor) backend.Tensor
}

// DecoderLayer is vLLM's pre-norm decoder layer (LlamaDecoderLayer,
// DeepseekV2DecoderLayer) on the un-summed pair (hidden_states, residual):
// fused add + input_layernorm, attention, fused add +
// post_attention_layernorm, MLP. Its site shows the pair it returns and
// stream = hidden_states + residual (HF's output_hidden_states[i+1]).
type DecoderLayer struct {
	site      *model.Site
	in, post  *AddRMSNorm
	attn, mlp Block
}

// NewDecoderLayer declares the decoder layer at b (vLLM class class) with
// its two RMSNorms of weight [hidden]; attn and mlp construct the attention
// and MLP from the layer's builder, in that order (the tree keeps call
// order).
func NewDecoderLayer(b Builder, class string, hidden int, eps float64, attn, mlp func(layer Builder) Block) *DecoderLayer {
	lb := b.Module(class, "hidden_states", "residual", "stream")
	d := &DecoderLayer{site: lb.Site()}
	d.in = NewAddRMSNorm(lb.Pp("input_layernorm"), hidden, eps, true)
	d.attn = attn(lb)
	d.post = NewAddRMSNorm(lb.Pp("post_attention_layernorm"), hidden, eps, true)
	d.mlp = mlp(lb)
	return d
}

// Forward runs the layer on (h, res), each [tokens, hidden] replicated in
// the activation dtype (res nil for the first layer run: the embeddings
// are then both the input and the residual), and returns the next pair
// (hidden_states, residual), un-summed as vLLM's layers return it.
func (d *DecoderLayer) Forward(r *model.Rank, b *model.Batch, h, res backend.Tensor) (backend.Tensor, backend.Tensor) {
	r.Enter(d.site, h, res)
	x, res := d.in.forward(r, h, res, h)
	a := d.attn.Forward(r, b, x)
	x2, res2 := d.post.Forward(r, a, res)
	out := d.mlp.Forward(r, b, x2)
	if f, ok := r.Fault(model.FaultPerturbRank, d.site); ok {
		out = perturb(r.Dev, out, f.Value)
	}
	r.Exit(d.site, func() []model.SiteTensor {
		stream := r.Dev.Add(out, res2)
		return []model.SiteTensor{{Name: "hidden_states", T: out, Shard: Rep, Writable: true}, {Name: "residual", T: res2, Shard: Rep, Writable: true},
			{Name: "stream", T: stream, Shard: Rep, SumOf: []string{"hidden_states", "residual"}}}
	})
	return out, res2
}

// CausalLM is one rank's share of a decoder-only model as vLLM builds it
// (LlamaForCausalLM, DeepseekV2ForCausalLM): the model (vocab-parallel
// embedding, decoder layers, final RMSNorm) and the vocab-parallel LM head.
type CausalLM struct {
	site   *model.Site // "model"
	embed  *VocabParallelEmbedding
	layers []*DecoderLayer
	norm   *AddRMSNorm
	head   *ParallelLMHead
}

// LM says how to declare a CausalLM.
type LM struct {
	ModelClass    string // vLLM class of "model": "LlamaModel"
	Vocab, Hidden int    // vocab_size, hidden_size
	Eps           float64
	Tied          bool // tie_word_embeddings
	// ModelWeights and HeadWeights, when set, are the checkpoint names of
	// "model" and of "lm_head" ("language_model.model",
	// "language_model.lm_head") where a wrapper moves them.
	ModelWeights, HeadWeights string
}

// NewCausalLM declares the model at root: "model" with embed_tokens, the
// decoder layers that layers declares under it, and norm; then lm_head.
func NewCausalLM(root Builder, c LM, layers func(model Builder) []*DecoderLayer) *CausalLM {
	mb := root.Pp("model")
	if c.ModelWeights != "" {
		mb = mb.Weights(c.ModelWeights)
	}
	mb = mb.Module(c.ModelClass, "hidden_states")
	m := &CausalLM{site: mb.Site()}
	// A pipeline stage loads its ends only where vLLM places them
	// (model.StageEnds): the embedding on the first stage, the final
	// norm and head on the last.
	m.embed = NewVocabParallelEmbedding(mb.Pp("embed_tokens").stageHolds(model.EmbedPath, c.Tied), c.Vocab, c.Hidden)
	m.layers = layers(mb)
	m.norm = NewAddRMSNorm(mb.Pp("norm").stageHolds(model.NormPath, c.Tied), c.Hidden, c.Eps, false)
	hb := root.Pp("lm_head").stageHolds(model.HeadPath, c.Tied)
	if c.HeadWeights != "" {
		hb = hb.Weights(c.HeadWeights)
	}
	var tied *VocabParallelEmbedding
	if c.Tied {
		tied = m.embed
	}
	m.head = NewParallelLMHead(hb, c.Vocab, c.Hidden, tied)
	return m
}

// Forward runs one step on rank r (vLLM's model forward and
// compute_logits) and returns the logits of b.LogitRows() [rows,
// vocab_size], gathered over ranks. As a pipeline stage (r.Pipe) a later
// stage starts from the received pair instead of the embeddings, and a
// stage before the last sends its pair on and returns nil.
func (m *CausalLM) Forward(r *model.Rank, b *model.Batch) backend.Tensor {
	dev := r.Dev
	r.Enter(m.site)
	var h, res backend.Tensor
	if p := r.Pipe; p != nil && !p.First() { // a later pipeline stage
		h, res = p.Recv(r)
	} else {
		h = m.embed.Forward(r, b.IDs)
	}
	for _, L := range m.layers {
		// Each layer in its own device scope: memory holds one layer's
		// activations; the input pair is freed once the next exists.
		dev.PushScope()
		h2, res2 := L.Forward(r, b, h, res)
		dev.PopScope(h2, res2)
		dev.Free(h)
		if res != nil && res != h {
			dev.Free(res)
		}
		h, res = h2, res2
	}
	if p := r.Pipe; p != nil && !p.Last() { // the next stage goes on from here
		p.Send(r, h, res)
		r.Leave(m.site)
		return nil
	}
	normed, _ := m.norm.Forward(r, h, res)
	r.Exit(m.site, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "hidden_states", T: normed, Shard: Rep, Writable: true}}
	})
	x := normed
	if rows := b.LogitRows(); len(rows) != b.Tokens() {
		x = dev.GatherRows(normed, rows)
	}
	return m.head.Forward(r, x)
}

// perturb returns x scaled by 1 + rel (model.FaultPerturbRank; rel 0
// takes 1e-2): one rank's replicated copy then differs from the others by
// rel of its magnitude.
func perturb(dev backend.Device, x backend.Tensor, rel float64) backend.Tensor {
	if rel == 0 {
		rel = 1e-2
	}
	return dev.Scale(x, float32(1+rel))
}

// Lens returns the final norm and this rank's LM head rows (model.Lens);
// their tensors are nil on a pipeline stage that does not hold them.
func (m *CausalLM) Lens() model.Lens {
	return model.Lens{Norm: m.norm.w, Eps: m.norm.eps, Head: m.head.w, Vocab: m.head.vocab, VocabSize: m.head.vocabSize}
}
