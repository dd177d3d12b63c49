package arch

import (
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/nn"
)

// Tree builds vLLM's module tree for world ranks: DeepseekV3ForCausalLM (or
// V2) > DeepseekV2Model > (VocabParallelEmbedding, DeepseekV2DecoderLayer
// for each selected layer, RMSNorm) and ParallelLMHead.
func (c *DeepseekConfig) Tree(world int) *model.Tree {
	return nn.Tree(c.v.arch, world, func(vb nn.Builder) *nn.CausalLM { return c.build(vb, lmLayouts[0]) })
}

// Load reads rank l.Rank's shard of the embeddings, the selected decoder
// layers, the final norm and the LM head, and nothing else (so --layers reads
// only the shards that hold them), from wherever the checkpoint keeps the
// language model (lmLayout) and in either expert layout (fusedExperts).
// Errors name the missing or misshapen tensor with the shape the config
// implies.
func (c *DeepseekConfig) Load(l *model.Loader, t *model.Tree) (model.RankModel, error) {
	lay, err := findLayout(l.Src, c.TieWordEmbeddings)
	if err != nil {
		return nil, err
	}
	ld := *l
	ld.Src = fusedExperts{model.FusedExpertHeaders{WeightSource: l.Src}}
	if l.Rank == 0 {
		l.Report.Unused = unusedTensors(ld.Src, lay, c.NumHiddenLayers)
	}
	return nn.Load(&ld, t, func(vb nn.Builder) *nn.CausalLM { return c.build(vb, lay) })
}

// layersName is the module (and checkpoint) name of the decoder layers'
// container under the model: "model.layers.3".
const layersName = "layers"

// mlpClass is vLLM's class of the dense layers' MLP and of the shared
// experts.
const mlpClass = "DeepseekV2MLP"

// build declares the model once (vLLM DeepseekV2ForCausalLM, which runs V2,
// V3 and Kimi-K2), its checkpoint names under lay: MLA attention in every
// layer, a dense SwiGLU MLP in the first first_k_dense_replace layers and
// the MoE block after.
func (c *DeepseekConfig) build(vb nn.Builder, lay lmLayout) *nn.CausalLM {
	H, eps := c.HiddenSize, c.RMSNormEps
	lm := nn.LM{ModelClass: "DeepseekV2Model", Vocab: c.VocabSize, Hidden: H, Eps: eps, Tied: c.TieWordEmbeddings,
		ModelWeights: lay.Model, HeadWeights: strings.TrimSuffix(lay.Head, ".weight")}
	return nn.NewCausalLM(vb, lm, func(m nn.Builder) []*nn.DecoderLayer {
		var layers []*nn.DecoderLayer
		for i := c.layers.First; i <= c.layers.Last; i++ {
			layers = append(layers, nn.NewDecoderLayer(m.Pp(layersName).PpI(i), "DeepseekV2DecoderLayer", H, eps,
				func(l nn.Builder) nn.Block { return nn.NewMLA(l.Pp("self_attn"), c.mla, i) },
				func(l nn.Builder) nn.Block {
					mlp := l.Pp("mlp")
					if c.isMoE(i) {
						return nn.NewMoE(mlp, c.moe)
					}
					return nn.NewGatedMLP(mlp, mlpClass, H, c.IntermediateSize, false, true)
				}))
		}
		return layers
	})
}
