//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// The MoE ops (backend.MoE) run a DeepSeek MoE layer's routing and routed
// experts on the device: the routing (moe_route), the permutation of the
// slots by expert (moe_count, moe_place), the gather of the tokens, the
// combine and SiLU·mul are kernels reading device arrays. The experts'
// GEMMs take one of two paths (rank_moe_grouped.go decides, HSDB_MOE_GEMM
// overrides): the grouped kernel of kernels/moe_gemm.cu, which reads the
// expert offsets on the device (no host round trip at all, as vLLM's
// fused_moe) and the weights as stored; or cuBLAS GEMMs, one per expert
// and projection, issued in one cgo call (ExpertGEMMs) after one copy of
// the per-expert row counts to the host (the GEMM sizes; [experts] int32
// per layer), on side streams (driver.ExpertGEMMs records what was
// measured).
// A watched site that shows topk_ids copies the routing to the host then
// (nn.MoE), never otherwise.

// expertSet is a rank's routed experts of one MoE layer (backend.MoE
// Experts): per expert, gate_proj and up_proj stacked as w13 [2·inter,
// hidden] (vLLM's w13: gate rows first) and down_proj w2 [hidden, inter],
// in the activation dtype.
type expertSet struct {
	dev           *Device
	first         int
	inter, hidden int
	w13, w2       []*Tensor
	q             *fp8Experts     // the experts kept in fp8 (rank_fp8.go) instead of w13, w2
	q4            *int4Experts    // the experts kept packed in int4 (rank_int4.go) instead of w13, w2
	gw            *groupedWeights // the weights as the grouped kernel reads them (rank_moe_grouped.go), or nil
}

// Shape returns [experts, inter, hidden].
func (e *expertSet) Shape() []int {
	if e.q != nil {
		return []int{len(e.q.down), e.inter, e.hidden}
	}
	if e.q4 != nil {
		return []int{len(e.q4.down), e.inter, e.hidden}
	}
	return []int{len(e.w13), e.inter, e.hidden}
}

// DType returns the dtype the experts compute in.
func (e *expertSet) DType() tensor.DType { return e.dev.act }

// Route runs moe_route (moeref.Route's rule) on logits [tokens, experts]
// f32: ids [tokens, top_k] I32 and weights [tokens, top_k] F32.
func (d *Device) Route(logits backend.Tensor, a *backend.RouteArgs) (backend.Tensor, backend.Tensor) {
	const op = "route"
	lt := d.get(op, logits)
	if lt.dt != tensor.F32 || lt.cols() != a.Experts || a.TopK <= 0 || a.TopK > a.Experts || (a.Bias != nil && len(a.Bias) != a.Experts) {
		d.badArg(op, "logits %v %s for %d experts (f32 expected), top_k %d, %d biases", lt.shape, lt.dt, a.Experts, a.TopK, len(a.Bias))
	}
	T := lt.rows()
	var ids, w *Tensor
	d.do(op, func() error {
		var err error
		if ids, err = d.output(tensor.I32, T, a.TopK); err != nil {
			return err
		}
		if w, err = d.output(tensor.F32, T, a.TopK); err != nil || T == 0 {
			return err
		}
		bp, err := d.uploadF32(a.Bias)
		if err != nil {
			return err
		}
		return d.g.MoERoute(ids.ptr(), w.ptr(), lt.ptr(), bp, T, a.Experts, a.TopK, a.Groups, a.TopKGroup, a.Sigmoid, a.NormTopK, a.Scale)
	})
	return ids, w
}

// Experts stacks each expert's gate and up rows into one w13 [2·inter,
// hidden] tensor (converted to the activation dtype) and frees gate and
// up; down is kept (converted when stored in another dtype). Peak extra
// memory: one expert's w13.
func (d *Device) Experts(first int, gate, up, down []backend.Tensor) backend.Tensor {
	const op = "experts"
	n := len(gate)
	if n == 0 || len(up) != n || len(down) != n {
		d.badArg(op, "%d gate, %d up and %d down weights", n, len(up), len(down))
	}
	g0 := d.get(op, gate[0])
	I, H := g0.rows(), g0.cols()
	set := &expertSet{dev: d, first: first, inter: I, hidden: H}
	gs, us, ds := make([]*Tensor, n), make([]*Tensor, n), make([]*Tensor, n)
	for e := range n {
		gs[e], us[e], ds[e] = d.get(op, gate[e]), d.get(op, up[e]), d.get(op, down[e])
		gt, ut, dn := gs[e], us[e], ds[e]
		if gt.rows() != I || gt.cols() != H || ut.rows() != I || ut.cols() != H || dn.rows() != H || dn.cols() != I {
			d.badArg(op, "expert %d: gate %v, up %v, down %v; want [%d, %d], [%d, %d], [%d, %d]", first+e, gt.shape, ut.shape, dn.shape, I, H, I, H, H, I)
		}
	}
	if set.q = d.fp8ExpertSet(op, first, gs, us, ds); set.q != nil {
		set.gw = d.groupedExperts(set)
		return set
	}
	if set.q4 = d.int4ExpertSet(op, first, gs, us, ds); set.q4 != nil {
		set.gw = d.groupedExperts(set)
		return set
	}
	es := int64(d.act.Size())
	for e := range n {
		gt, ut, dn := gs[e], us[e], ds[e]
		for _, t := range []*Tensor{gt, ut, dn} {
			d.float(op, t)
		}
		var w13, w2 *Tensor
		d.do(op, func() error {
			var err error
			if w13, err = d.newTensor(d.act, []int{2 * I, H}, driver.Weights, false); err != nil {
				return err
			}
			half := int64(I) * int64(H) * es
			for i, src := range []*Tensor{gt, ut} {
				p, err := d.as(src, d.act)
				if err != nil {
					return err
				}
				if err := d.g.CopyDevice(w13.ptr().Add(int64(i)*half), p, half); err != nil {
					return err
				}
			}
			w2 = dn
			if dn.dt != d.act {
				if w2, err = d.newTensor(d.act, dn.shape, driver.Weights, false); err != nil {
					return err
				}
				return d.g.Cast(w2.ptr(), dn.ptr(), int64(dn.numel()), dn.dt, d.act)
			}
			return nil
		})
		d.Free(gt)
		d.Free(ut)
		if w2 != dn {
			d.Free(dn)
		}
		set.w13 = append(set.w13, w13)
		set.w2 = append(set.w2, w2)
	}
	set.gw = d.groupedExperts(set)
	return set
}

// RoutedExperts computes the routed experts' weighted sum for x [tokens,
// hidden] with ids and weights [tokens, top_k] from Route (see
// backend.MoE): slots permuted by expert on the device, the tokens
// gathered, w13 and w2 GEMMs per expert, SiLU·mul on w13's halves, and
// moe_combine summing each token's slots in top-k order in f32, rounded
// once. Out: [tokens, hidden] in ActDType.
func (d *Device) RoutedExperts(x, ids, weights, experts backend.Tensor) backend.Tensor {
	const op = "routed_experts"
	xt, it, wt := d.get(op, x), d.get(op, ids), d.get(op, weights)
	set, ok := experts.(*expertSet)
	if !ok || set == nil || set.dev.g != d.g {
		d.badArg(op, "an expert set of type %T from another device or backend", experts)
	}
	T, H, I := xt.rows(), set.hidden, set.inter
	if xt.dt != d.act || xt.cols() != H || it.dt != tensor.I32 || wt.dt != tensor.F32 || it.rows() != T || wt.rows() != T || wt.cols() != it.cols() {
		d.badArg(op, "x %v %s (want [*, %d] %s), ids %v %s, weights %v %s", xt.shape, xt.dt, H, d.act, it.shape, it.dt, wt.shape, wt.dt)
	}
	k, n := it.cols(), len(set.w13)
	if set.q != nil {
		n = len(set.q.down)
	}
	if set.q4 != nil {
		n = len(set.q4.down)
	}
	dt, es := d.act, int64(d.act.Size())
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(dt, T, H); err != nil || T == 0 || H == 0 {
			return err
		}
		if xt.ptr()%16 == 0 && useGroupedKernel(set, T*k, d.hopper()) {
			return d.routedGrouped(y, xt, it, wt, set, T, k)
		}
		slots := T * k
		// counts [n], srcTok and slotRow [slots] int32, then the GEMMs'
		// address arrays (3n uint64, 8-byte aligned).
		idx, err := d.mem.alloc(int64(4*(n+2*slots+2)+24*n), driver.Activations)
		if err != nil {
			return err
		}
		defer d.mem.free([]block{{idx, driver.Activations}})
		counts, srcTok, slotRow := idx, idx.Add(int64(4*n)), idx.Add(int64(4*(n+slots)))
		addrs := idx.Add(int64(4*(n+2*slots)+7) &^ 7)
		if err := d.g.MoEAlign(counts, srcTok, slotRow, it.ptr(), slots, k, set.first, n); err != nil {
			return err
		}
		hc := make([]byte, 4*n)
		if err := d.g.CopyToHost(hc, counts); err != nil {
			return err
		}
		rows := make([]int32, n)
		N := 0
		for e := range rows {
			rows[e] = int32(binary.LittleEndian.Uint32(hc[4*e:]))
			N += int(rows[e])
		}
		if N > slots {
			return fmt.Errorf("moe_align counted %d routed rows for %d slots", N, slots)
		}
		var yp driver.Ptr
		if N > 0 {
			bufs, err := d.mem.alloc(int64(N)*es*int64(H+2*I+I), driver.Activations)
			if err != nil {
				return err
			}
			defer d.mem.free([]block{{bufs, driver.Activations}})
			xp := bufs                                 // [N, H] gathered tokens, later the w2 output
			h13 := bufs.Add(int64(N) * es * int64(H))  // [N, 2I]
			act := h13.Add(int64(N) * es * int64(2*I)) // [N, I]
			if err := d.g.GatherRows(xp, xt.ptr(), srcTok, N, H, T, dt); err != nil {
				return err
			}
			w8 := d.w8a8Experts(set.q != nil, H, I)
			if w8 {
				if err := d.g.FP8ActFakeQuant(xp, xp, N, H); err != nil {
					return err
				}
			}
			if set.q != nil {
				err = d.fp8ExpertGEMMs(h13, xp, set.q.gateUp, 2, set.q.l13, rows, 2*I, H, dt, addrs)
			} else if set.q4 != nil {
				err = d.int4ExpertGEMMs(h13, xp, set.q4.gateUp, 2, rows, 2*I, H, dt, addrs)
			} else {
				err = d.g.ExpertGEMMs(h13, xp, ptrs(set.w13), rows, 2*I, H, dt, addrs)
			}
			if err != nil {
				return err
			}
			if err := d.g.SiluMul(act, h13, h13.Add(int64(I)*es), N, I, 2*I, 2*I, dt); err != nil {
				return err
			}
			if w8 {
				if err := d.g.FP8ActFakeQuant(act, act, N, I); err != nil {
					return err
				}
			}
			if set.q != nil {
				err = d.fp8ExpertGEMMs(xp, act, set.q.down, 1, set.q.l2, rows, H, I, dt, addrs)
			} else if set.q4 != nil {
				err = d.int4ExpertGEMMs(xp, act, set.q4.down, 1, rows, H, I, dt, addrs)
			} else {
				err = d.g.ExpertGEMMs(xp, act, ptrs(set.w2), rows, H, I, dt, addrs)
			}
			if err != nil {
				return err
			}
			yp = xp
		}
		return d.g.MoECombine(y.ptr(), yp, slotRow, wt.ptr(), T, k, H, N, false, dt)
	})
	return y
}

// ptrs returns the device addresses of ts.
func ptrs(ts []*Tensor) []driver.Ptr {
	out := make([]driver.Ptr, len(ts))
	for i, t := range ts {
		out[i] = t.ptr()
	}
	return out
}
