package arch

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// gatedMLP is one rank's share of a SwiGLU MLP as vLLM's DeepseekV2MLP
// builds it: gate_up_proj (MergedColumnParallelLinear: gate_proj and up_proj,
// each [intermediate, hidden], split over rows) → SiluAndMul →
// down_proj (RowParallelLinear, [hidden, intermediate], split over columns).
// DeepSeek's dense layers end in an all-reduce; its shared experts do not
// (reduce false, vLLM's reduce_results=False): their partial sum is added to
// the routed experts' before the MoE block's one all-reduce.
type gatedMLP struct {
	wGate, wUp backend.Tensor // [I/tp, hidden]
	wDown      backend.Tensor // [hidden, I/tp]
	cols       [2]int         // this rank's intermediate range
	full       int            // intermediate size
	reduce     bool

	site, gateUp, act, down *model.Site
}

// addGatedMLP adds the module named name (vLLM class class) under parent,
// with its children and parameters for world ranks: intermediate size I,
// hidden size H; without reduce, down_proj shows only its partial sum.
func addGatedMLP(parent *model.Module, name, class string, H, I, world int, reduce bool) *model.Module {
	mlp := parent.Add(name, class, "input", "output")
	gu := mlp.Add("gate_up_proj", "MergedColumnParallelLinear", "input", "gate", "up")
	ir := model.EvenRanges(I, world)
	for _, n := range []string{"gate_proj", "up_proj"} {
		gu.Params = append(gu.Params, model.Param{Name: mlp.Path + "." + n + ".weight", Shape: []int{I, H}, Dim: 0, Ranges: ir})
	}
	mlp.Add("act_fn", "SiluAndMul", "output")
	down := []string{"input", "partial"}
	if reduce {
		down = append(down, "output")
	}
	mlp.Add("down_proj", "RowParallelLinear", down...).Param("weight", []int{H, I}, 1, ir)
	return mlp
}

// loadGatedMLP loads rank l.Rank's share of the MLP whose weights are under
// l's prefix and whose tree module is at path.
func loadGatedMLP(l *model.Loader, t *model.Tree, path string, H, I int, reduce bool) *gatedMLP {
	ic := model.Even(I, l.World, l.Rank)
	m := &gatedMLP{cols: ic, full: I, reduce: reduce}
	m.wGate = l.Linear("gate_proj.weight", I, H, ic, [2]int{0, H})
	m.wUp = l.Linear("up_proj.weight", I, H, ic, [2]int{0, H})
	m.wDown = l.Linear("down_proj.weight", H, I, [2]int{0, H}, ic)
	m.site, m.gateUp, m.act, m.down = t.Site(path), t.Site(path+".gate_up_proj"), t.Site(path+".act_fn"), t.Site(path+".down_proj")
	return m
}

// forward runs the MLP on x [tokens, hidden] (replicated) and returns
// [tokens, hidden]: the full output when reduce, else this rank's partial
// sum.
func (m *gatedMLP) forward(r *model.Rank, x backend.Tensor) backend.Tensor {
	dev := r.Dev
	r.Enter(m.site, x)
	g := dev.Linear(x, m.wGate, nil)
	u := dev.Linear(x, m.wUp, nil)
	r.Leaf(m.gateUp, x, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "gate", T: g, Shard: shard(m.cols, m.full)}, {Name: "up", T: u, Shard: shard(m.cols, m.full)}}
	})
	a := dev.SiluMul(g, u)
	r.Leaf(m.act, g, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "output", T: a, Shard: shard(m.cols, m.full)}}
	})
	p := dev.Linear(a, m.wDown, nil)
	out, outShard := p, partial
	if m.reduce {
		out, outShard = r.Comm.AllReduceSum(p), model.Sharding{Kind: model.Replicated}
	}
	r.Leaf(m.down, a, func() []model.SiteTensor {
		ts := []model.SiteTensor{{Name: "input", T: a, Shard: shard(m.cols, m.full)}, {Name: "partial", T: p, Shard: partial}}
		if m.reduce {
			ts = append(ts, model.SiteTensor{Name: "output", T: out, Shard: outShard})
		}
		return ts
	})
	r.Exit(m.site, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "output", T: out, Shard: outShard}}
	})
	return out
}
