package cpu

import (
	"fmt"
	"math"

	"hsdb/engine/backend"
)

// Attention computes causal softmax attention for each token and query head
// over its sequence's cache rows (backend.AttnArgs). Scores and the softmax
// are float32 with a float64 running sum, and the max is subtracted first, as
// PyTorch's softmax does; the exponential is expNeg (within 2 ulp). Work is
// split over (token, kv head) pairs.
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
	y := make([]float32, T*outCols)
	group := a.Heads / a.KVHeads
	kcols, vcols := kt.Cols(), vt.Cols()
	maxLen := 0
	for _, p := range a.Pos {
		maxLen = max(maxLen, int(p)+1)
	}
	// One unit of work is one (token, kv head) pair with the group of query
	// heads that share that kv head, so each key and value row is read once
	// per group and a single decode token still spreads over the cores.
	parallelFor(T*a.KVHeads, T*a.Heads*maxLen*(a.DK+a.DV), func(lo, hi int) {
		scores := make([]float32, group*maxLen)
		mx := make([]float32, group)
		inv := make([]float32, group)
		for u := lo; u < hi; u++ {
			t, kh := u/a.KVHeads, u%a.KVHeads
			base, pos := int(a.Base[t]), int(a.Pos[t])
			first := 0
			if a.Window > 0 && pos-a.Window+1 > 0 {
				first = pos - a.Window + 1
			}
			n := pos - first + 1
			q0 := t*a.Heads*a.DK + kh*group*a.DK
			for g := range group {
				mx[g] = float32(math.Inf(-1))
			}
			ko := (base+first)*kcols + kh*a.DK
			for j := range n {
				kr := kv[ko : ko+a.DK]
				for g := range group {
					qr := qv[q0+g*a.DK : q0+(g+1)*a.DK]
					qr = qr[:len(kr)]
					var s0, s1 float32
					c := 0
					for ; c+1 < len(kr); c += 2 {
						s0 += qr[c] * kr[c]
						s1 += qr[c+1] * kr[c+1]
					}
					if c < len(kr) {
						s0 += qr[c] * kr[c]
					}
					sc := (s0 + s1) * a.Scale
					scores[g*maxLen+j] = sc
					if sc > mx[g] {
						mx[g] = sc
					}
				}
				ko += kcols
			}
			for g := range group {
				sc := scores[g*maxLen : g*maxLen+n]
				var sum float64
				m := mx[g]
				for j, s := range sc {
					e := expNeg(s - m)
					sc[j] = e
					sum += float64(e)
				}
				inv[g] = float32(1 / sum)
			}
			o0 := t*outCols + kh*group*a.DV
			vo := (base+first)*vcols + kh*a.DV
			for j := range n {
				vr := vv[vo : vo+a.DV]
				for g := range group {
					out := y[o0+g*a.DV : o0+(g+1)*a.DV]
					out = out[:len(vr)]
					p := scores[g*maxLen+j] * inv[g]
					for c, x := range vr {
						out[c] += p * x
					}
				}
				vo += vcols
			}
		}
	})
	return wrap(y, T, outCols)
}
