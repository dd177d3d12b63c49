package cpu

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/moeref"
	"hsdb/engine/tensor"
)

// experts is the CPU backend's expert set (backend.MoE.Experts): the
// per-expert weights as they were uploaded.
type experts struct {
	first          int
	gate, up, down []backend.Tensor
	inter, hidden  int
	dt             tensor.DType
}

// Shape returns [experts, inter, hidden].
func (e *experts) Shape() []int { return []int{len(e.gate), e.inter, e.hidden} }

// DType returns the experts' weight dtype.
func (e *experts) DType() tensor.DType { return e.dt }

// Route runs moeref.Route on logits [tokens, experts] f32: ids [tokens,
// top_k] I32 and weights [tokens, top_k] F32.
func (d *Device) Route(logits backend.Tensor, a *backend.RouteArgs) (backend.Tensor, backend.Tensor) {
	lt := host(logits)
	if lt.Cols() != a.Experts || a.TopK <= 0 || a.TopK > a.Experts || (a.Bias != nil && len(a.Bias) != a.Experts) {
		panic(&backend.DeviceError{Device: d.name, Op: "route", Err: fmt.Errorf("logits %v for %d experts, top_k %d, %d biases", lt.Shape, a.Experts, a.TopK, len(a.Bias))})
	}
	T := lt.Rows()
	ids, w := moeref.Route(a, f32(logits), T)
	it := tensor.New(tensor.I32, T, a.TopK)
	for i, e := range ids {
		it.Data[4*i], it.Data[4*i+1], it.Data[4*i+2], it.Data[4*i+3] = byte(e), byte(e>>8), byte(e>>16), byte(e>>24)
	}
	res, wv := d.newOutput(false, T, a.TopK)
	copy(wv, w)
	return Tensor{it}, res
}

// Experts keeps the per-expert weights as they are (the CPU backend
// multiplies each expert's tokens separately).
func (d *Device) Experts(first int, gate, up, down []backend.Tensor) backend.Tensor {
	if len(gate) == 0 || len(up) != len(gate) || len(down) != len(gate) {
		panic(&backend.DeviceError{Device: d.name, Op: "experts", Err: fmt.Errorf("%d gate, %d up and %d down weights", len(gate), len(up), len(down))})
	}
	g := host(gate[0])
	return &experts{first: first, gate: gate, up: up, down: down, inter: g.Rows(), hidden: g.Cols(), dt: g.DType}
}

// RoutedExperts computes, expert by expert in id order, silu(x_e·gateᵀ) ·
// (x_e·upᵀ) · downᵀ for the tokens x_e routed to it (in token order) and
// adds it, times the routing weight, into the token's output row (vLLM's
// naive MoE loop; each token's sum in expert-id order).
func (d *Device) RoutedExperts(x, ids, weights, set backend.Tensor) backend.Tensor {
	ex, ok := set.(*experts)
	it, wt := host(ids), host(weights)
	xt := host(x)
	if !ok || it.DType != tensor.I32 || it.Rows() != xt.Rows() || wt.Rows() != xt.Rows() || wt.Cols() != it.Cols() || xt.Cols() != ex.hidden {
		panic(&backend.DeviceError{Device: d.name, Op: "routed_experts", Err: fmt.Errorf("x %v, ids %v %s, weights %v with an expert set of %T", xt.Shape, it.Shape, it.DType, wt.Shape, set)})
	}
	T, k, n := xt.Rows(), it.Cols(), len(ex.gate)
	w := f32(weights)
	rows := make([][]int32, n)
	wts := make([][]float32, n)
	for t := range T {
		for j := range k {
			e := int(it.At(t*k+j)) - ex.first
			if e >= 0 && e < n {
				rows[e] = append(rows[e], int32(t))
				wts[e] = append(wts[e], w[t*k+j])
			}
		}
	}
	acc := d.Alloc(T, ex.hidden)
	for e := range n {
		if len(rows[e]) == 0 {
			continue
		}
		d.PushScope()
		xe := d.GatherRows(x, rows[e])
		a := d.SiluMul(d.Linear(xe, ex.gate[e], nil), d.Linear(xe, ex.up[e], nil))
		d.ScatterAddRows(acc, d.Linear(a, ex.down[e], nil), rows[e], wts[e])
		d.PopScope()
	}
	return acc
}
