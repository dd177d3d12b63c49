package arch

import (
	"fmt"
	"slices"

	"hsdb/engine/backend"
	"hsdb/engine/backend/moeref"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// DeepSeek's mixture of experts (DeepSeekMoE, arXiv:2401.06066; HF
// DeepseekV3MoE / DeepseekV2Moe; vLLM DeepseekV2MoE with FusedMoE): a
// replicated router (gate) picks top_k of n_routed_experts SwiGLU experts per
// token (see router), the experts' outputs are summed with the routing
// weights, and n_shared_experts experts fused into one SwiGLU MLP of
// moe_intermediate_size·n_shared_experts run on every token and are added.
//
// Split as vLLM splits it. Tensor-parallel experts (default, vLLM's FusedMoE
// without expert parallelism): every rank holds every expert's rows
// [r·I/tp, (r+1)·I/tp) of gate_proj and up_proj and the same columns of
// down_proj, computes every routed token, and holds a partial sum. Expert
// parallel (--ep, vLLM's --enable-expert-parallel with linear placement):
// rank r holds experts [r·E/ep, (r+1)·E/ep) whole (the first E mod ep ranks
// one more) and computes only the tokens routed to them. Either way the
// shared experts are tensor-parallel without their own reduction, and one
// all-reduce sums routed and shared partials.

// moeDims are the sizes and rules of one model's MoE layers.
type moeDims struct {
	hidden, experts, inter int // hidden_size, n_routed_experts, moe_intermediate_size
	sharedInter            int // moe_intermediate_size · n_shared_experts (0: none)
	ep                     bool
	bias                   bool // the gate has e_score_correction_bias
	route                  backend.RouteArgs
	class                  string // vLLM MoE block class
}

// expertRange returns the experts [start, end) rank holds under expert
// parallelism over world ranks: vLLM's linear placement, the first
// experts mod world ranks holding one more.
func expertRange(experts, world, rank int) [2]int {
	base, rem := experts/world, experts%world
	start := rank*base + min(rank, rem)
	n := base
	if rank < rem {
		n++
	}
	return [2]int{start, start + n}
}

// localExperts returns the experts rank computes: all of them with
// tensor-parallel experts, its block under expert parallelism.
func (d *moeDims) localExperts(rank, world int) [2]int {
	if d.ep {
		return expertRange(d.experts, world, rank)
	}
	return [2]int{0, d.experts}
}

// addMoE adds the MoE block "mlp" with its gate, experts and shared experts
// under layer.
func addMoE(layer *model.Module, d *moeDims, world int) *model.Module {
	H, E, I := d.hidden, d.experts, d.inter
	names := []string{"input", "topk_ids", "topk_weights", "routed", "shared", "output"}
	if d.sharedInter == 0 {
		names = []string{"input", "topk_ids", "topk_weights", "routed", "output"}
	}
	mlp := layer.Add("mlp", d.class, names...)
	g := mlp.Add("gate", "GateLinear", "input", "logits", "topk_ids", "topk_weights", "tokens_per_expert", "local_load").Param("weight", []int{E, H}, -1, nil)
	if d.bias {
		g.Param("e_score_correction_bias", []int{E}, -1, nil)
	}
	ex := mlp.Add("experts", "FusedMoE", "input", "expert_load", "output")
	for e := range E {
		rows := make([][2]int, world)
		for r := range world {
			switch {
			case !d.ep:
				rows[r] = model.Even(I, world, r)
			case e >= expertRange(E, world, r)[0] && e < expertRange(E, world, r)[1]:
				rows[r] = [2]int{0, I}
			}
		}
		p := fmt.Sprintf("%s.%d.", ex.Path, e)
		ex.Params = append(ex.Params,
			model.Param{Name: p + "gate_proj.weight", Shape: []int{I, H}, Dim: 0, Ranges: rows},
			model.Param{Name: p + "up_proj.weight", Shape: []int{I, H}, Dim: 0, Ranges: rows},
			model.Param{Name: p + "down_proj.weight", Shape: []int{H, I}, Dim: 1, Ranges: rows})
	}
	if d.sharedInter > 0 {
		addGatedMLP(mlp, "shared_experts", "DeepseekV2MLP", H, d.sharedInter, world, false)
	}
	return mlp
}

// moeLayer is one rank's share of one MoE layer.
type moeLayer struct {
	d       *moeDims
	route   backend.RouteArgs // with this layer's correction bias
	gate    backend.Tensor    // [experts, hidden], replicated
	local   [2]int            // experts this rank computes
	cols    [2]int            // each local expert's intermediate rows this rank holds
	experts backend.Tensor    // the local experts' gate/up [I_r, hidden] and down [hidden, I_r] (Device.Experts)
	shared  *gatedMLP

	site, gateSite, expSite *model.Site
}

// loadMoE loads rank l.Rank's share of the MoE block whose weights are under
// l's prefix ("...layers.N.mlp") and whose tree module is at path.
func loadMoE(l *model.Loader, t *model.Tree, path string, d *moeDims) *moeLayer {
	H, E, I := d.hidden, d.experts, d.inter
	L := &moeLayer{d: d, route: d.route, local: d.localExperts(l.Rank, l.World), cols: [2]int{0, I}}
	if !d.ep {
		L.cols = model.Even(I, l.World, l.Rank)
	}
	L.gate = l.Full("gate.weight", E, H)
	if d.bias {
		L.route.Bias = loadBias(l, "gate.e_score_correction_bias", E)
	}
	var wGate, wUp, wDown []backend.Tensor
	for e := L.local[0]; e < L.local[1]; e++ {
		x := l.Pp("experts").PpI(e)
		wGate = append(wGate, x.Rows("gate_proj.weight", []int{I, H}, L.cols[0], L.cols[1]))
		wUp = append(wUp, x.Rows("up_proj.weight", []int{I, H}, L.cols[0], L.cols[1]))
		wDown = append(wDown, x.Cols("down_proj.weight", []int{H, I}, L.cols[0], L.cols[1]))
	}
	if l.Err() == nil && len(wGate) > 0 {
		L.experts = l.Dev.Experts(L.local[0], wGate, wUp, wDown)
	}
	if d.sharedInter > 0 {
		L.shared = loadGatedMLP(l.Pp("shared_experts"), t, path+".shared_experts", H, d.sharedInter, false)
	}
	L.site, L.gateSite, L.expSite = t.Site(path), t.Site(path+".gate"), t.Site(path+".experts")
	return L
}

// loadBias reads e_score_correction_bias [experts] to the host as float32.
// HF keeps it as a float32 buffer initialised to zeros, so a checkpoint
// without it routes with a zero bias; that is what happens here too.
func loadBias(l *model.Loader, n string, experts int) []float32 {
	if !l.Has(n) {
		return make([]float32, experts)
	}
	name := l.Name(n)
	dt, shape, _ := l.Src.Meta(name)
	if !slices.Equal(shape, []int{experts}) || !dt.IsFloat() || dt == tensor.F8E4M3 {
		l.Fail(fmt.Errorf("%w: tensor %s is %s %s, the config implies float [%d]", model.ErrWeight, name, dt, tensor.ShapeString(shape), experts))
		return nil
	}
	t, err := l.Src.Tensor(name)
	if err != nil {
		l.Fail(fmt.Errorf("%w: %w", model.ErrWeight, err))
		return nil
	}
	return t.ToF32()
}

// forward runs the MoE block on x [tokens, hidden] (replicated) and returns
// the all-reduced output [tokens, hidden].
func (L *moeLayer) forward(r *model.Rank, b *model.Batch, x backend.Tensor) backend.Tensor {
	dev, d := r.Dev, L.d
	T, E, k := b.Tokens(), d.experts, d.route.TopK
	r.Enter(L.site, x)

	// HF's DeepseekV3TopkRouter / DeepseekV2 gate compute the logits in
	// float32 whatever the model's dtype; so do we, so that bf16 runs route
	// as HF's do.
	logits := dev.Linear(dev.ToF32(x), L.gate, nil) // [T, E] f32
	idsD, wD := dev.Route(logits, &L.route)
	// The ids and weights stay on the device; a watched site copies them
	// (and the loads derived from them) to the host, once.
	var host *moeHost
	toHost := func() *moeHost {
		if host == nil {
			host = newMoEHost(dev, idsD, wD, T, k, E, L.local)
		}
		return host
	}
	localShard := model.Sharding{Kind: model.Replicated}
	if d.ep {
		localShard = shard(L.local, E)
	}
	hostRep := model.Sharding{Kind: model.Replicated}
	r.Leaf(L.gateSite, x, func() []model.SiteTensor {
		h := toHost()
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "logits", T: logits, Shard: rep(logits)},
			{Name: "topk_ids", Host: h.ids, Shard: hostRep}, {Name: "topk_weights", Host: h.w, Shard: hostRep},
			{Name: "tokens_per_expert", Host: h.load, Shard: hostRep}, {Name: "local_load", Host: h.local, Shard: localShard}}
	})

	r.Enter(L.expSite, x)
	var acc backend.Tensor
	if L.experts != nil {
		acc = dev.RoutedExperts(x, idsD, wD, L.experts)
	} else {
		acc = dev.Alloc(T, d.hidden)
	}
	r.Exit(L.expSite, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "expert_load", Host: toHost().local, Shard: localShard}, {Name: "output", T: acc, Shard: partial}}
	})

	sum := acc
	var sh backend.Tensor
	if L.shared != nil {
		sh = L.shared.forward(r, x)
		sum = dev.Add(acc, sh)
	}
	out := r.Comm.AllReduceSum(sum)
	r.Exit(L.site, func() []model.SiteTensor {
		h := toHost()
		ts := []model.SiteTensor{{Name: "input", T: x, Shard: rep(x)}, {Name: "topk_ids", Host: h.ids, Shard: hostRep},
			{Name: "topk_weights", Host: h.w, Shard: hostRep}, {Name: "routed", T: acc, Shard: partial}}
		if sh != nil {
			ts = append(ts, model.SiteTensor{Name: "shared", T: sh, Shard: partial})
		}
		return append(ts, model.SiteTensor{Name: "output", T: out, Shard: rep(out)})
	})
	return out
}

// moeHost is a MoE layer's routing on the host, for watched sites:
// topk_ids [T, k] I64 and topk_weights [T, k] F32 (HF's dtypes), tokens per
// expert [1, E] and the rank's local load [1, experts_r] (I64).
type moeHost struct {
	ids, w, load, local *tensor.Tensor
}

// newMoEHost copies the device's ids and weights [T, k] to the host and
// counts the loads (moeref.ExpertLoad).
func newMoEHost(dev backend.Device, ids, w backend.Tensor, T, k, E int, local [2]int) *moeHost {
	idf := dev.ToHost(ids, 0, T, 0, k).ToF32() // ids < 2^24 are exact in f32
	v := make([]int32, len(idf))
	iv := make([]int64, len(idf))
	for i, f := range idf {
		v[i], iv[i] = int32(f), int64(f)
	}
	load := moeref.ExpertLoad(v, E)
	return &moeHost{
		ids:   tensor.FromI64(iv, T, k),
		w:     tensor.FromF32(dev.ToHost(w, 0, T, 0, k).ToF32(), T, k),
		load:  tensor.FromI64(load, 1, E), // one row, so a rank's expert range is a column range
		local: tensor.FromI64(load[local[0]:local[1]], 1, local[1]-local[0]),
	}
}
