package arch

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// normSites are the three sites of a pre-norm decoder layer that its
// attention and MLP blocks do not emit themselves: the layer's output and
// its two RMSNorms.
type normSites struct{ layer, in, post *model.Site }

// decoderLayer runs vLLM's pre-norm decoder layer (LlamaDecoderLayer,
// DeepseekV2DecoderLayer .forward) on the un-summed pair (h, res), res nil
// for the first layer run: fused add + input_layernorm, attention,
// fused add + post_attention_layernorm, MLP; it returns the next pair
// (hidden_states, residual) and emits the layer's sites with vLLM's names,
// the layer output also showing stream = hidden_states + residual.
func decoderLayer(r *model.Rank, s normSites, inNorm, postNorm backend.Tensor, eps float32, h, res backend.Tensor,
	attn, mlp func(x backend.Tensor) backend.Tensor) (backend.Tensor, backend.Tensor) {
	dev := r.Dev
	r.Enter(s.layer, h, res)
	var x backend.Tensor
	inH, inRes := h, res
	if res == nil {
		x, res = dev.RMSNorm(h, inNorm, eps), h
	} else {
		x, res = dev.AddRMSNorm(h, res, inNorm, eps)
	}
	r.Leaf(s.in, inH, func() []model.SiteTensor {
		ts := []model.SiteTensor{{Name: "input", T: inH, Shard: rep(inH)}}
		if inRes != nil {
			ts = append(ts, model.SiteTensor{Name: "input_residual", T: inRes, Shard: rep(inRes)})
		}
		return append(ts, model.SiteTensor{Name: "hidden_states", T: x, Shard: rep(x)}, model.SiteTensor{Name: "residual", T: res, Shard: rep(res)})
	})
	a := attn(x)
	r.Enter(s.post, a, res)
	x2, res2 := dev.AddRMSNorm(a, res, postNorm, eps)
	r.Exit(s.post, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: a, Shard: rep(a)}, {Name: "input_residual", T: res, Shard: rep(res)}, {Name: "hidden_states", T: x2, Shard: rep(x2)}, {Name: "residual", T: res2, Shard: rep(res2)}}
	})
	out := mlp(x2)
	r.Exit(s.layer, func() []model.SiteTensor {
		stream := dev.Add(out, res2)
		return []model.SiteTensor{{Name: "hidden_states", T: out, Shard: rep(out)}, {Name: "residual", T: res2, Shard: rep(res2)}, {Name: "stream", T: stream, Shard: rep(stream)}}
	})
	return out, res2
}
