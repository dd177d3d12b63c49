package nn

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// Part is a named piece of every output unit of a linear, as its site shows
// it: kv_b_proj's heads are [k_nope | v], kv_a_proj_with_mqa's one unit is
// [kv_c | k_pe]. Width is in features.
type Part struct {
	Name  string
	Width int
}

// Out is one weight of a column-parallel (or replicated) linear block:
// Weight is its HF module name relative to the block's parent ("q_proj"),
// the weight is [Split.Size(), in] split over its rows by Split, and each of
// a rank's output units shows at the site as Parts (widths summing to
// Split.Width). Bias adds the [Split.Size()] bias, split the same way.
type Out struct {
	Weight string
	Split  Split
	Parts  []Part
	Bias   bool
}

// O declares weight of output split s whose units show as parts; with one
// part of the unit's full width, the whole output shows under that name.
func O(weight string, s Split, parts ...Part) Out { return Out{Weight: weight, Split: s, Parts: parts} }

// P is a Part.
func P(name string, width int) Part { return Part{Name: name, Width: width} }

// WithBias returns o with a bias when on.
func (o Out) WithBias(on bool) Out { o.Bias = on; return o }

// Linear is one rank's share of a linear block whose input is replicated:
// vLLM's ColumnParallelLinear, ReplicatedLinear and the merged
// column-parallel layers (QKVParallelLinear, MergedColumnParallelLinear),
// which compute several HF weights on the same input. Each weight is its own
// matrix here (as HF stores them) and its own GEMM: one GEMM over the
// concatenated weights, as vLLM runs a merged layer, measured no faster
// at DeepSeek-V3's shapes (4096 tokens, bf16, torch's cuBLAS on an H200:
// gate_proj + up_proj 3.118 ms as two GEMMs against 3.094 as one, the
// shared experts' 0.348 against 0.351, q_a_proj + kv_a_proj_with_mqa
// 0.180 against 0.171; scripts/bench/gemm_merge.py), so the weights stay
// apart as HF stores them.
// The site shows the input and every output part, column-parallel parts
// labelled with their shard of the full tensor.
type Linear struct {
	site *model.Site
	ws   []colWeight
	outs []backend.Tensor // Forward's result, reused (one rank runs on one goroutine)
}

type colWeight struct {
	w, b   backend.Tensor // [units_r·width, in], [units_r·width]
	parts  []Part
	width  int // features per unit
	units  int // units this rank holds
	labels []model.Sharding
}

// NewColumnParallel declares the ColumnParallelLinear at b (vLLM
// ColumnParallelLinear): weight [s.Size(), in] at b, split over rows by s.
func NewColumnParallel(b Builder, in int, s Split, bias bool, parts ...Part) *Linear {
	return newLinear(b, b, "ColumnParallelLinear", in, []Out{{Split: s, Parts: parts, Bias: bias}})
}

// NewReplicatedLinear declares the ReplicatedLinear at b: weight [out, in]
// at b on every rank.
func NewReplicatedLinear(b Builder, in, out int, parts ...Part) *Linear {
	return newLinear(b, b, "ReplicatedLinear", in, []Out{{Split: Replicated(1, out), Parts: parts}})
}

// NewMerged declares the merged linear named name under parent (vLLM class
// class: "MergedColumnParallelLinear" for gate_up_proj of gate_proj and
// up_proj, or fused_qkv_a_proj of DeepSeek's replicated q_a_proj and
// kv_a_proj_with_mqa), computing each of outs on the same input [tokens,
// in].
func NewMerged(parent Builder, name, class string, in int, outs ...Out) *Linear {
	return newLinear(parent.Pp(name), parent, class, in, outs)
}

// NewQKVParallel declares vLLM's QKVParallelLinear named name under parent:
// q_proj [q.Size(), in] split by q's heads, k_proj and v_proj [kv.Size(),
// in] split by kv's heads (a kv head replicated on several ranks when there
// are fewer than ranks), showing q, k and v.
func NewQKVParallel(parent Builder, name string, in int, q, kv Split, bias bool) *Linear {
	return NewMerged(parent, name, "QKVParallelLinear", in,
		O("q_proj", q, P("q", q.Width)).WithBias(bias), O("k_proj", kv, P("k", kv.Width)).WithBias(bias), O("v_proj", kv, P("v", kv.Width)).WithBias(bias))
}

// newLinear declares the module at b of class class whose weights are outs:
// parent.Pp(o.Weight), or b itself for an Out without a Weight name.
func newLinear(b, parent Builder, class string, in int, outs []Out) *Linear {
	names := []string{"input"}
	for _, o := range outs {
		for _, p := range o.Parts {
			names = append(names, p.Name)
		}
	}
	mb := b.Module(class, names...)
	L := &Linear{site: mb.Site()}
	rank := b.Rank()
	for _, o := range outs {
		wb := b
		if o.Weight != "" {
			wb = parent.Pp(o.Weight)
		}
		w := 0
		for _, p := range o.Parts {
			w += p.Width
		}
		if w != o.Split.Width {
			panic(fmt.Sprintf("nn: %s: the parts of %s are %d features wide, its units %d", b.path, wb.path, w, o.Split.Width))
		}
		full := o.Split.Size()
		dim, ranges := o.Split.dim(0), o.Split.FeatureRanges()
		u := o.Split.Local(rank)
		cw := colWeight{parts: o.Parts, width: o.Split.Width, units: u[1] - u[0]}
		for _, p := range o.Parts {
			cw.labels = append(cw.labels, o.Split.Label(rank, p.Width))
		}
		cw.w = wb.linear(mb, full, in, dim, ranges)
		if o.Bias {
			mb.param(wb.path+".bias", []int{full}, dim, ranges)
			if wb.l != nil {
				rows := o.Split.Features(rank)
				cw.b = wb.l.Rows("bias", []int{full}, rows[0], rows[1])
			}
		}
		L.ws = append(L.ws, cw)
	}
	L.outs = make([]backend.Tensor, len(names)-1)
	return L
}

// Forward computes every weight on x [tokens, in] (replicated), emits the
// site and returns the output parts in declared order, each [tokens,
// units_r·width]. The slice is the block's own and is overwritten by the
// next Forward.
func (L *Linear) Forward(r *model.Rank, x backend.Tensor) []backend.Tensor {
	dev := r.Dev
	outs, k := L.outs, 0
	for i := range L.ws {
		w := &L.ws[i]
		k = w.split(dev, dev.Linear(x, w.w, w.b), outs, k)
	}
	r.Leaf(L.site, x, func() []model.SiteTensor {
		ts := []model.SiteTensor{{Name: "input", T: x, Shard: Rep}}
		k := 0
		for _, w := range L.ws {
			for j, p := range w.parts {
				ts = append(ts, model.SiteTensor{Name: p.Name, T: outs[k], Shard: w.labels[j], Writable: true})
				k++
			}
		}
		return ts
	})
	return outs
}

// ForwardJoined is Forward for a block with one weight, returning the
// weight's whole output [tokens, units_r·width], each unit's parts side by
// side as the weight computes them (kv_b_proj: per head [k_nope | v]),
// instead of a copy of each part. The site's part tensors are made only
// when a hook visits it; their values, edited or not, then make the
// returned output, so what the hook sees and writes is what flows on.
func (L *Linear) ForwardJoined(r *model.Rank, x backend.Tensor) backend.Tensor {
	if len(L.ws) != 1 {
		panic(fmt.Sprintf("nn: ForwardJoined on a block of %d weights", len(L.ws)))
	}
	dev, w := r.Dev, &L.ws[0]
	y := dev.Linear(x, w.w, w.b)
	var parts []backend.Tensor
	r.Leaf(L.site, x, func() []model.SiteTensor {
		parts = make([]backend.Tensor, len(w.parts))
		w.split(dev, y, parts, 0)
		ts := []model.SiteTensor{{Name: "input", T: x, Shard: Rep}}
		for j, p := range w.parts {
			ts = append(ts, model.SiteTensor{Name: p.Name, T: parts[j], Shard: w.labels[j], Writable: true})
		}
		return ts
	})
	if parts == nil || len(parts) == 1 {
		return y
	}
	T := y.Shape()[0]
	per := make([]backend.Tensor, len(parts))
	for j, p := range parts {
		per[j] = dev.Reshape(p, T*w.units, w.parts[j].Width)
	}
	return dev.Reshape(dev.ConcatCols(per...), T, w.units*w.width)
}

// Apply computes a block of one weight on x [tokens, in] without a site:
// [tokens, units_r·width], each unit's parts side by side as
// ForwardJoined returns them. For a second use of the weight inside a
// module whose site already showed the step's own output (MLA's
// re-expansion of cached latent rows by kv_b_proj).
func (L *Linear) Apply(dev backend.Device, x backend.Tensor) backend.Tensor {
	if len(L.ws) != 1 {
		panic(fmt.Sprintf("nn: Apply on a block of %d weights", len(L.ws)))
	}
	return dev.Linear(x, L.ws[0].w, L.ws[0].b)
}

// Forward1 is Forward for a block with one output part.
func (L *Linear) Forward1(r *model.Rank, x backend.Tensor) backend.Tensor { return L.Forward(r, x)[0] }

// split stores y [tokens, units·width] as its parts, each [tokens,
// units·part width], in out from index k, and returns the next index.
func (w *colWeight) split(dev backend.Device, y backend.Tensor, out []backend.Tensor, k int) int {
	if len(w.parts) == 1 {
		out[k] = y
		return k + 1
	}
	T := y.Shape()[0]
	per := y
	if w.units > 1 {
		per = dev.Reshape(y, T*w.units, w.width)
	}
	off := 0
	for _, p := range w.parts {
		s := dev.SliceCols(per, off, off+p.Width)
		if w.units > 1 {
			s = dev.Reshape(s, T, w.units*p.Width)
		}
		out[k] = s
		k++
		off += p.Width
	}
	return k
}

// RowLinear is one rank's share of vLLM's RowParallelLinear: weight [out,
// in] split over its input columns, the input sharded the same way, each
// rank computing a partial sum of the output that an all-reduce completes.
// Without reduce (vLLM's reduce_results=False, DeepSeek's shared experts) the
// caller sums the partial with others before one all-reduce.
type RowLinear struct {
	site   *model.Site
	w, b   backend.Tensor // [out, in_r]; bias [out] on rank 0 only (added once by the sum)
	in     model.Sharding
	reduce bool
}

// NewRowParallel declares the RowParallelLinear at b: weight [out,
// in.Size()] split over columns by in, with a bias [out] when bias; its site
// shows input, partial and (with reduce) output.
func NewRowParallel(b Builder, in Split, out int, bias, reduce bool) *RowLinear {
	names := []string{"input", "partial"}
	if reduce {
		names = append(names, "output")
	}
	mb := b.Module("RowParallelLinear", names...)
	L := &RowLinear{site: mb.Site(), in: in.Label(b.Rank(), in.Width), reduce: reduce}
	L.w = b.linear(mb, out, in.Size(), in.dim(1), in.FeatureRanges())
	if bias {
		mb.param(b.path+".bias", []int{out}, -1, nil)
		if b.l != nil && b.Rank() == 0 {
			L.b = b.l.Full("bias", out)
		}
	}
	return L
}

// Forward computes x [tokens, in_r] (sharded) times the rank's columns,
// all-reduces when the block reduces, emits the site and returns [tokens,
// out]: replicated, or the rank's partial sum.
func (L *RowLinear) Forward(r *model.Rank, x backend.Tensor) backend.Tensor {
	p := r.Dev.Linear(x, L.w, L.b)
	out := p
	if L.reduce {
		if _, skip := r.Fault(model.FaultSkipAllReduce, L.site); skip {
			out = r.Dev.Scale(p, 1) // the partial sum passed on as if reduced (a copy: the site still shows partial apart)
		} else {
			out = r.Comm.AllReduceSum(p)
		}
	}
	r.Leaf(L.site, x, func() []model.SiteTensor {
		ts := []model.SiteTensor{{Name: "input", T: x, Shard: L.in}, {Name: "partial", T: p, Shard: Partial}}
		if L.reduce {
			ts = append(ts, model.SiteTensor{Name: "output", T: out, Shard: Rep, Writable: true})
		}
		return ts
	})
	return out
}

// OutLabel returns how Forward's result relates to the full output.
func (L *RowLinear) OutLabel() model.Sharding {
	if L.reduce {
		return Rep
	}
	return Partial
}
