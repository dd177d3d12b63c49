package nn

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// RMSNorm is vLLM's RMSNorm over the last dimension, y = x / rms(x) · weight
// with weight [dim] replicated (HF LlamaRMSNorm, DeepseekV3RMSNorm). The
// site shows the input under in (unless in is "") and the output under out.
type RMSNorm struct {
	w       backend.Tensor // [dim]
	eps     float32
	site    *model.Site
	in, out string
}

// NewRMSNorm declares the RMSNorm at b with weight [dim] and epsilon eps;
// its site shows in and out ("input", "output"; "", "q" for a per-head
// norm that shows only its result).
func NewRMSNorm(b Builder, dim int, eps float64, in, out string) *RMSNorm {
	names := []string{out}
	if in != "" {
		names = []string{in, out}
	}
	mb := b.Module("RMSNorm", names...)
	return &RMSNorm{w: mb.Full("weight", dim), eps: float32(eps), site: mb.Site(), in: in, out: out}
}

// Forward normalizes x [tokens, dim] (replicated) and emits the site.
func (n *RMSNorm) Forward(r *model.Rank, x backend.Tensor) backend.Tensor {
	y := r.Dev.RMSNorm(x, n.w, n.eps)
	r.Leaf(n.site, x, func() []model.SiteTensor {
		ts := []model.SiteTensor{{Name: n.out, T: y, Shard: Rep, Writable: true}}
		if n.in != "" {
			ts = append([]model.SiteTensor{{Name: n.in, T: x, Shard: Rep}}, ts...)
		}
		return ts
	})
	return y
}

// Heads normalizes each of the heads heads of x [tokens, heads·dim] (Qwen3's
// q_norm and k_norm) and emits the site with the result labelled label.
func (n *RMSNorm) Heads(r *model.Rank, x backend.Tensor, heads int, label model.Sharding) backend.Tensor {
	dev := r.Dev
	T, w := x.Shape()[0], x.Shape()[1]
	y := dev.Reshape(dev.RMSNorm(dev.Reshape(x, T*heads, w/heads), n.w, n.eps), T, w)
	r.Leaf(n.site, x, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: n.out, T: y, Shard: label, Writable: true}}
	})
	return y
}

// AddRMSNorm is vLLM's RMSNorm called with a residual (fused add + norm, as
// its decoder layers use it): residual' = h + residual, hidden_states =
// RMSNorm(residual'). Its site shows input, input_residual (when there is
// one), hidden_states and, for a decoder layer's norms, residual.
type AddRMSNorm struct {
	w           backend.Tensor // [hidden]
	eps         float32
	site        *model.Site
	residualOut bool
}

// NewAddRMSNorm declares the fused add + RMSNorm at b with weight [dim];
// residualOut shows the new residual (a decoder layer's norms; the final
// norm shows hidden_states only).
func NewAddRMSNorm(b Builder, dim int, eps float64, residualOut bool) *AddRMSNorm {
	names := []string{"input", "input_residual", "hidden_states"}
	if residualOut {
		names = append(names, "residual")
	}
	mb := b.Module("RMSNorm", names...)
	return &AddRMSNorm{w: mb.Full("weight", dim), eps: float32(eps), site: mb.Site(), residualOut: residualOut}
}

// Forward returns (RMSNorm(h + res), h + res) for h, res [tokens, hidden]
// (replicated), or (RMSNorm(h), h) when res is nil (the first layer run),
// and emits the site; the call chain shows the inputs h and res.
func (n *AddRMSNorm) Forward(r *model.Rank, h, res backend.Tensor) (backend.Tensor, backend.Tensor) {
	return n.forward(r, h, res, h, res)
}

// forward is Forward with the call chain showing frame as the inputs.
func (n *AddRMSNorm) forward(r *model.Rank, h, res backend.Tensor, frame ...backend.Tensor) (backend.Tensor, backend.Tensor) {
	dev := r.Dev
	r.Enter(n.site, frame...)
	var x, sum backend.Tensor
	if res == nil {
		x, sum = dev.RMSNorm(h, n.w, n.eps), h
	} else {
		x, sum = dev.AddRMSNorm(h, res, n.w, n.eps)
	}
	r.Exit(n.site, func() []model.SiteTensor {
		ts := []model.SiteTensor{{Name: "input", T: h, Shard: Rep}}
		if res != nil {
			ts = append(ts, model.SiteTensor{Name: "input_residual", T: res, Shard: Rep})
		}
		ts = append(ts, model.SiteTensor{Name: "hidden_states", T: x, Shard: Rep, Writable: true})
		if n.residualOut {
			ts = append(ts, model.SiteTensor{Name: "residual", T: sum, Shard: Rep, Writable: true})
		}
		return ts
	})
	return x, sum
}
