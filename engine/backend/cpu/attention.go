package cpu

import (
	"fmt"

	"hsdb/engine/backend"
)

// Attention computes causal softmax attention for each token and query head
// over its sequence's cache rows (backend.AttnArgs): q [tokens, Heads*DK],
// k [cacheRows, KVHeads*DK], v [cacheRows, KVHeads*DV], all f32; out
// [tokens, Heads*DV] f32. For each head, the scores q·k are one dotRows
// call over the key rows, the softmax is softmaxScaled, and the output is
// one accumRows call over the value rows. Work is split over (token, kv
// head) pairs.
func (d *Device) Attention(q, k, v backend.Tensor, a *backend.AttnArgs) backend.Tensor {
	qt, kt, vt := host(q), host(k), host(v)
	T := qt.Rows()
	if a.KVHeads <= 0 || a.Heads%a.KVHeads != 0 || qt.Cols() != a.Heads*a.DK || kt.Cols() != a.KVHeads*a.DK || vt.Cols() != a.KVHeads*a.DV || len(a.Base) != T || len(a.Pos) != T {
		panic(&backend.DeviceError{Device: d.name, Op: "attention", Err: fmt.Errorf("q %v k %v v %v for %d/%d heads dk %d dv %d, %d tokens", qt.Shape, kt.Shape, vt.Shape, a.Heads, a.KVHeads, a.DK, a.DV, T)})
	}
	for t := range T {
		if a.Pos[t] < 0 || int(a.Base[t])+int(a.Pos[t]) >= kt.Rows() || a.Base[t] < 0 {
			panic(&backend.DeviceError{Device: d.name, Op: "attention", Err: fmt.Errorf("token %d at cache row %d+%d outside a cache of %d rows", t, a.Base[t], a.Pos[t], kt.Rows())})
		}
	}
	qv, kv, vv := f32(q), f32(k), f32(v)
	outCols := a.Heads * a.DV
	res, y := d.newOutput(true, T, outCols) // accumRows adds into it
	kcols, vcols := kt.Cols(), vt.Cols()
	maxLen := 0
	for _, p := range a.Pos {
		maxLen = max(maxLen, int(p)+1)
	}
	// One unit of work is one (token, kv head) pair with the group of query
	// heads that share that kv head, so the head's key and value rows are
	// still in cache for the group's second query head, and a single decode
	// token still spreads over the cores.
	units, work := T*a.KVHeads, T*a.Heads*maxLen*(a.DK+a.DV)
	if parallel(units, work) {
		parallelFor(units, func(lo, hi int) { attend(y, qv, kv, vv, kcols, vcols, maxLen, a, lo, hi) })
	} else {
		attend(y, qv, kv, vv, kcols, vcols, maxLen, a, 0, units)
	}
	return res
}

// attend computes the output rows of attention units [lo, hi) (unit u is
// token u/KVHeads with kv head u%KVHeads and its group of query heads) into
// y [tokens, Heads*DV], from q [tokens, Heads*DK] and the caches k [rows,
// kcols], v [rows, vcols]; no sequence attends to more than maxLen keys.
func attend(y, q, k, v []float32, kcols, vcols, maxLen int, a *backend.AttnArgs, lo, hi int) {
	var buf [512]float32
	scores := buf[:]
	if maxLen > len(buf) {
		scores = make([]float32, maxLen)
	}
	group := a.Heads / a.KVHeads
	outCols := a.Heads * a.DV
	for u := lo; u < hi; u++ {
		t, kh := u/a.KVHeads, u%a.KVHeads
		base, pos := int(a.Base[t]), int(a.Pos[t])
		first := 0
		if a.Window > 0 && pos-a.Window+1 > 0 {
			first = pos - a.Window + 1
		}
		n := pos - first + 1
		q0 := t*a.Heads*a.DK + kh*group*a.DK
		ko := (base+first)*kcols + kh*a.DK
		vo := (base+first)*vcols + kh*a.DV
		o0 := t*outCols + kh*group*a.DV
		for g := range group {
			sc := scores[:n]
			dotRows(sc, k[ko:], kcols, q[q0+g*a.DK:q0+(g+1)*a.DK])
			softmaxScaled(sc, a.Scale)
			accumRows(y[o0+g*a.DV:o0+(g+1)*a.DV], v[vo:], vcols, sc)
		}
	}
}

// MLAAttention is backend.MLAAttentionExpanded: the per-head keys and
// values written out with WriteMLAKV, then Attention (the CPU backend has
// no fused form; its results define the op's meaning).
func (d *Device) MLAAttention(q, kv, kPe backend.Tensor, a *backend.MLAAttnArgs) backend.Tensor {
	return backend.MLAAttentionExpanded(d, q, kv, kPe, a)
}
