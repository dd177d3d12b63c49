package nn

import (
	"fmt"
	"slices"

	"hsdb/engine/backend"
	"hsdb/engine/backend/moeref"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// MoE is one rank's share of DeepSeek's mixture of experts (DeepSeekMoE,
// arXiv:2401.06066; HF DeepseekV3MoE / DeepseekV2Moe; vLLM DeepseekV2MoE
// with FusedMoE): a replicated router (gate) picks top_k of n_routed_experts
// SwiGLU experts per token (Router), the experts' outputs are summed with
// the routing weights, and n_shared_experts experts fused into one SwiGLU
// MLP of moe_intermediate_size·n_shared_experts run on every token and are
// added.
//
// Split as vLLM splits it. Tensor-parallel experts (default, vLLM's FusedMoE
// without expert parallelism): every rank holds every expert's rows
// [r·I/tp, (r+1)·I/tp) of gate_proj and up_proj and the same columns of
// down_proj, computes every routed token, and holds a partial sum. Expert
// parallel (--ep, vLLM's --enable-expert-parallel with linear placement):
// rank r holds experts ExpertRange(E, world, r) whole and computes only the
// tokens routed to them. Either way the shared experts are tensor-parallel
// without their own reduction, and one all-reduce sums routed and shared
// partials.
type MoE struct {
	c                *MoEConfig
	router           Router         // with this layer's correction bias
	gate             backend.Tensor // [experts, hidden], replicated
	local            [2]int         // experts this rank computes
	experts          backend.Tensor // the local experts (backend.MoE.Experts), nil without any
	shared           *GatedMLP
	localLab         model.Sharding
	site, gSite, exp *model.Site
}

// MoEConfig is one model's MoE layers.
type MoEConfig struct {
	Class       string // vLLM class of the block: "DeepseekV3MoE"
	SharedClass string // vLLM class of shared_experts: "DeepseekV2MLP"
	Hidden      int    // hidden_size
	Experts     int    // n_routed_experts
	Inter       int    // moe_intermediate_size
	SharedInter int    // moe_intermediate_size · n_shared_experts (0: none)
	EP          bool   // experts placed whole on ranks (--ep)
	Bias        bool   // the gate has e_score_correction_bias
	Route       Router
}

// ExpertRange returns the experts [start, end) rank holds under expert
// parallelism over world ranks: vLLM's linear placement, the first
// experts mod world ranks holding one more.
func ExpertRange(experts, world, rank int) [2]int {
	base, rem := experts/world, experts%world
	start := rank*base + min(rank, rem)
	n := base
	if rank < rem {
		n++
	}
	return [2]int{start, start + n}
}

// expertRows returns expert e's intermediate rows [start, end) on rank:
// its share under tensor-parallel experts, all or nothing under --ep.
func (c *MoEConfig) expertRows(e, world, rank int) [2]int {
	if !c.EP {
		return model.Even(c.Inter, world, rank)
	}
	if l := ExpertRange(c.Experts, world, rank); e >= l[0] && e < l[1] {
		return [2]int{0, c.Inter}
	}
	return [2]int{}
}

// NewMoE declares the MoE block at b (the layer's "mlp") with its gate,
// experts and shared experts.
func NewMoE(b Builder, c *MoEConfig) *MoE {
	names := []string{"input", "topk_ids", "topk_weights", "routed", "shared", "output"}
	if c.SharedInter == 0 {
		names = []string{"input", "topk_ids", "topk_weights", "routed", "output"}
	}
	mb := b.Module(c.Class, names...)
	world, rank := b.World(), b.Rank()
	H, E, I := c.Hidden, c.Experts, c.Inter
	m := &MoE{c: c, router: c.Route, site: mb.Site(), local: [2]int{0, E}, localLab: Rep}
	if c.EP {
		m.local = ExpertRange(E, world, rank)
		m.localLab = Sharded(m.local, E)
	}
	gb := mb.Pp("gate").Module("GateLinear", "input", "logits", "topk_ids", "topk_weights", "tokens_per_expert", "local_load")
	m.gSite = gb.Site()
	m.gate = gb.Full("weight", E, H)
	if c.Bias {
		gb.param(gb.path+".e_score_correction_bias", []int{E}, -1, nil)
		if gb.l != nil {
			m.router.bias = loadBias(gb.l, "e_score_correction_bias", E)
		}
	}
	xb := mb.Pp("experts").Module("FusedMoE", "input", "expert_load", "output")
	m.exp = xb.Site()
	var gate, up, down []backend.Tensor // per local expert: [I_r, hidden], [I_r, hidden], [hidden, I_r]
	for e := range E {
		eb := xb.PpI(e)
		rows := b.Ranges(func(r int) [2]int { return c.expertRows(e, world, r) })
		if b.l != nil && (e < m.local[0] || e >= m.local[1]) {
			continue // another rank's expert
		}
		g, u, d := eb.Pp("gate_proj").linear(xb, I, H, 0, rows), eb.Pp("up_proj").linear(xb, I, H, 0, rows), eb.Pp("down_proj").linear(xb, H, I, 1, rows)
		gate, up, down = append(gate, g), append(up, u), append(down, d)
	}
	if b.l != nil && b.l.Err() == nil && len(gate) > 0 {
		m.experts = b.l.Dev.Experts(m.local[0], gate, up, down)
	}
	if c.SharedInter > 0 {
		m.shared = NewGatedMLP(mb.Pp("shared_experts"), c.SharedClass, H, c.SharedInter, false, false)
	}
	return m
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

// routing is one step's expert choice: what the gate site shows and what
// the routed experts compute. ids and w stay on the device; the host copies
// (and the loads counted from them) are made once, when a watched site asks
// (host).
type routing struct {
	logits backend.Tensor // [tokens, experts] f32
	ids    backend.Tensor // [tokens, top_k] I32, best first
	w      backend.Tensor // [tokens, top_k] F32
	h      *routingHost
}

// routingHost is a routing on the host, as the sites show it.
type routingHost struct {
	idsT   *tensor.Tensor // topk_ids [tokens, top_k] I64
	wT     *tensor.Tensor // topk_weights [tokens, top_k] F32, routed_scaling_factor applied (moeref.Route)
	loadT  *tensor.Tensor // tokens_per_expert [1, experts] I64
	localT *tensor.Tensor // the local experts' tokens [1, local experts] I64
}

// host copies the routing to the host on first use (ids < 2^24 are exact
// in the f32 ToHost returns) and counts the loads (moeref.ExpertLoad).
func (rt *routing) host(dev backend.Device, E int, local [2]int) *routingHost {
	if rt.h != nil {
		return rt.h
	}
	s := rt.ids.Shape()
	T, k := s[0], s[1]
	idf := dev.ToHost(rt.ids, 0, T, 0, k).F32()
	ids := make([]int32, len(idf))
	ids64 := make([]int64, len(idf))
	for i, f := range idf {
		ids[i], ids64[i] = int32(f), int64(f)
	}
	load := moeref.ExpertLoad(ids, E)
	rt.h = &routingHost{
		idsT:   tensor.FromI64(ids64, T, k),
		wT:     tensor.FromF32(dev.ToHost(rt.w, 0, T, 0, k).F32(), T, k),
		loadT:  tensor.FromI64(load, 1, E), // one row, so a rank's expert range is a column range
		localT: tensor.FromI64(load[local[0]:local[1]], 1, local[1]-local[0]),
	}
	return rt.h
}

// Forward runs the block on x [tokens, hidden] (replicated) and returns the
// all-reduced output [tokens, hidden] (under the skip-allreduce fault, the
// rank's partial sum of routed and shared experts instead).
func (m *MoE) Forward(r *model.Rank, b *model.Batch, x backend.Tensor) backend.Tensor {
	dev := r.Dev
	r.Enter(m.site, x)
	rt := m.route(r, x)
	acc := m.routedExperts(r, b, x, rt)
	sum := acc
	var sh backend.Tensor
	if m.shared != nil {
		sh = m.shared.Forward(r, b, x)
		sum = dev.Add(acc, sh)
	}
	var out backend.Tensor
	if _, skip := r.Fault(model.FaultSkipAllReduce, m.site); skip {
		// vLLM's DeepseekV2MoE all-reduces routed + shared once (its
		// experts are built with reduce_results=False); the fault drops
		// that one all-reduce, as RowLinear's does its own (a copy: the
		// site still shows routed and shared apart).
		out = dev.Scale(sum, 1)
	} else {
		out = r.Comm.AllReduceSum(sum)
	}
	r.Exit(m.site, func() []model.SiteTensor {
		h := rt.host(dev, m.c.Experts, m.local)
		ts := []model.SiteTensor{{Name: "input", T: x, Shard: Rep}, {Name: "topk_ids", Host: h.idsT, Shard: Rep},
			{Name: "topk_weights", Host: h.wT, Shard: Rep}, {Name: "routed", T: acc, Shard: Partial}}
		if sh != nil {
			ts = append(ts, model.SiteTensor{Name: "shared", T: sh, Shard: Partial})
		}
		return append(ts, model.SiteTensor{Name: "output", T: out, Shard: Rep, Writable: true})
	})
	return out
}

// route is the gate (vLLM GateLinear + its top-k): router logits in
// float32 (HF's DeepseekV3TopkRouter / DeepseekV2 gate compute them in
// float32 whatever the model's dtype, so bf16 runs route as HF's do) and
// the Router's choice, both on the device (backend.MoE.Route; the ids equal
// the host reference's). It emits the gate's site.
func (m *MoE) route(r *model.Rank, x backend.Tensor) *routing {
	dev := r.Dev
	rt := &routing{logits: dev.LinearF32(x, m.gate)}
	g := &m.router
	if _, soft := r.Fault(model.FaultRouterSoftmax, m.gSite); soft {
		c := *g
		c.Sigmoid, g = false, &c
	}
	if _, nob := r.Fault(model.FaultRouterNoBias, m.gSite); nob {
		c := *g
		c.bias, g = nil, &c
	}
	rt.ids, rt.w = dev.Route(rt.logits, g.args())
	r.Leaf(m.gSite, x, func() []model.SiteTensor {
		h := rt.host(dev, m.c.Experts, m.local)
		return []model.SiteTensor{{Name: "input", T: x, Shard: Rep}, {Name: "logits", T: rt.logits, Shard: Rep},
			{Name: "topk_ids", Host: h.idsT, Shard: Rep}, {Name: "topk_weights", Host: h.wT, Shard: Rep},
			{Name: "tokens_per_expert", Host: h.loadT, Shard: Rep}, {Name: "local_load", Host: h.localT, Shard: m.localLab}}
	})
	return rt
}

// routedExperts is FusedMoE: each local expert's SwiGLU on the tokens routed
// to it, summed into the rank's partial sum [tokens, hidden] with the
// routing weights (backend.MoE.RoutedExperts). It emits the experts' site.
func (m *MoE) routedExperts(r *model.Rank, b *model.Batch, x backend.Tensor, rt *routing) backend.Tensor {
	dev := r.Dev
	r.Enter(m.exp, x)
	var acc backend.Tensor
	if m.experts != nil {
		acc = dev.RoutedExperts(x, rt.ids, rt.w, m.experts)
	} else {
		acc = dev.Alloc(b.Tokens(), m.c.Hidden)
	}
	r.Exit(m.exp, func() []model.SiteTensor {
		return []model.SiteTensor{{Name: "input", T: x, Shard: Rep}, {Name: "expert_load", Host: rt.host(dev, m.c.Experts, m.local).localT, Shard: m.localLab}, {Name: "output", T: acc, Shard: Partial}}
	})
	return acc
}
