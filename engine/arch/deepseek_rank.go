package arch

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// deepseekLayer is one rank's decoder layer: vLLM DeepseekV2DecoderLayer.
type deepseekLayer struct {
	index            int
	inNorm, postNorm backend.Tensor // [hidden]
	attn             *mlaLayer
	dense            *gatedMLP // first_k_dense_replace layers
	moe              *moeLayer // the others

	site, inSite, postSite *model.Site
}

// deepseekRank is one rank's share of a DeepSeek-architecture model.
type deepseekRank struct {
	ends
	c      *DeepseekConfig
	layers []*deepseekLayer
}

// Load reads rank l.Rank's shard of the embeddings, the selected decoder
// layers, the final norm and the LM head, and nothing else (so --layers reads
// only the shards that hold them). Errors name the missing or misshapen
// tensor with the shape the config implies.
func (c *DeepseekConfig) Load(l *model.Loader, t *model.Tree) (model.RankModel, error) {
	lay, err := findLayout(l.Src, c.TieWordEmbeddings)
	if err != nil {
		return nil, err
	}
	src := fusedExperts{l.Src}
	ld := *l
	ld.Src = src
	if l.Rank == 0 {
		l.Report.Unused = unusedTensors(src, lay, c.NumHiddenLayers)
	}
	H := c.HiddenSize
	m := &deepseekRank{c: c}
	lm := ld.Pp(lay.model)
	m.ends = loadEnds(&ld, lm, t, lay.head, c.VocabSize, H, c.TieWordEmbeddings, c.RMSNormEps)
	for i := c.layers.First; i <= c.layers.Last; i++ {
		ll := lm.Pp("layers").PpI(i)
		p := fmt.Sprintf("model.layers.%d", i)
		L := &deepseekLayer{index: i, site: t.Site(p), inSite: t.Site(p + ".input_layernorm"), postSite: t.Site(p + ".post_attention_layernorm")}
		L.inNorm = ll.Full("input_layernorm.weight", H)
		L.postNorm = ll.Full("post_attention_layernorm.weight", H)
		L.attn = loadMLA(ll.Pp("self_attn"), t, p+".self_attn", c.mla)
		if c.isMoE(i) {
			L.moe = loadMoE(ll.Pp("mlp"), t, p+".mlp", c.moe)
		} else {
			L.dense = loadGatedMLP(ll.Pp("mlp"), t, p+".mlp", H, c.IntermediateSize, true)
		}
		m.layers = append(m.layers, L)
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// Forward runs one step on rank r: vLLM DeepseekV2Model.forward and
// compute_logits. With --layers A-B, layer A receives the embeddings.
func (m *deepseekRank) Forward(r *model.Rank, b *model.Batch) backend.Tensor {
	h := m.embedTokens(r, b)
	h, res := runLayers(r.Dev, h, len(m.layers), func(i int, h, res backend.Tensor) (backend.Tensor, backend.Tensor) {
		return m.layer(r, b, m.layers[i], h, res)
	})
	return m.logits(r, b, h, res)
}

// layer runs one decoder layer (vLLM DeepseekV2DecoderLayer.forward) on the
// un-summed pair (h, res) and returns the next pair; res is nil for the
// first layer run.
func (m *deepseekRank) layer(r *model.Rank, b *model.Batch, L *deepseekLayer, h, res backend.Tensor) (backend.Tensor, backend.Tensor) {
	return decoderLayer(r, normSites{L.site, L.inSite, L.postSite}, L.inNorm, L.postNorm, float32(m.c.RMSNormEps), h, res,
		func(x backend.Tensor) backend.Tensor { return L.attn.forward(r, b, L.index, x) },
		func(x backend.Tensor) backend.Tensor {
			if L.moe != nil {
				return L.moe.forward(r, b, x)
			}
			return L.dense.forward(r, x)
		})
}
