package nn

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// GatedMLP is one rank's share of the SwiGLU MLP as vLLM builds it
// (LlamaMLP, DeepseekV2MLP; HF down_proj(silu(gate_proj(x)) · up_proj(x))):
// gate_up_proj (MergedColumnParallelLinear of gate_proj and up_proj, each
// [intermediate, hidden] split over rows) → act_fn (SiluAndMul) → down_proj
// (RowParallelLinear [hidden, intermediate] split over columns). Without
// reduce (vLLM's reduce_results=False: DeepSeek's shared experts) down_proj
// and the MLP end in the rank's partial sum, which the caller adds to others
// before one all-reduce.
type GatedMLP struct {
	site    *model.Site
	gateUp  *Linear
	act     *model.Site
	actDim  model.Sharding
	down    *RowLinear
	outMark model.Sharding
}

// NewGatedMLP declares the MLP at b (vLLM class class) with intermediate
// size inter and hidden size hidden; bias adds biases to all three
// projections (mlp_bias).
func NewGatedMLP(b Builder, class string, hidden, inter int, bias, reduce bool) *GatedMLP {
	mb := b.Module(class, "input", "output")
	s := Even(b, inter, 1)
	m := &GatedMLP{site: mb.Site(), actDim: s.Label(b.Rank(), 1)}
	m.gateUp = NewMerged(mb, "gate_up_proj", "MergedColumnParallelLinear", hidden,
		O("gate_proj", s, P("gate", 1)).WithBias(bias), O("up_proj", s, P("up", 1)).WithBias(bias))
	m.act = mb.Pp("act_fn").Module("SiluAndMul", "output").Site()
	m.down = NewRowParallel(mb.Pp("down_proj"), s, hidden, bias, reduce)
	m.outMark = m.down.OutLabel()
	return m
}

// Forward runs the MLP on x [tokens, hidden] (replicated) and returns
// [tokens, hidden]: replicated, or the rank's partial sum without reduce.
func (m *GatedMLP) Forward(r *model.Rank, _ *model.Batch, x backend.Tensor) backend.Tensor {
	r.Enter(m.site, x)
	gu := m.gateUp.Forward(r, x)
	a := r.Dev.SiluMul(gu[0], gu[1])
	r.Leaf(m.act, gu[0], func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "output", T: a, Shard: m.actDim, Writable: true}}
	})
	out := m.down.Forward(r, a)
	r.Exit(m.site, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: Rep}, {Name: "output", T: out, Shard: m.outMark, Writable: true}}
	})
	return out
}
