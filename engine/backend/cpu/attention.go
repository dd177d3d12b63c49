package cpu

import (
	"fmt"
	"math"

	"hsdb/engine/backend"
)

// Attention computes causal softmax attention for each token and query head
// over its sequence's cache rows (backend.AttnArgs). Scores and the softmax
// are float32 with a float64 running sum, and the max is subtracted first, as
// PyTorch's softmax does. Work is split over tokens.
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
	parallelFor(T, T*a.Heads*maxLen*(a.DK+a.DV), func(lo, hi int) {
		scores := make([]float32, maxLen)
		for t := lo; t < hi; t++ {
			base, pos := int(a.Base[t]), int(a.Pos[t])
			first := 0
			if a.Window > 0 && pos-a.Window+1 > 0 {
				first = pos - a.Window + 1
			}
			n := pos - first + 1
			for h := range a.Heads {
				kh := h / group
				qr := qv[t*a.Heads*a.DK+h*a.DK : t*a.Heads*a.DK+(h+1)*a.DK]
				sc := scores[:n]
				mx := float32(math.Inf(-1))
				ko := (base+first)*kcols + kh*a.DK
				for j := range sc {
					kr := kv[ko : ko+len(qr)]
					var s0, s1 float32
					c := 0
					for ; c+2 <= len(qr); c += 2 {
						s0 += qr[c] * kr[c]
						s1 += qr[c+1] * kr[c+1]
					}
					if c < len(qr) {
						s0 += qr[c] * kr[c]
					}
					s := (s0 + s1) * a.Scale
					sc[j] = s
					mx = max(mx, s)
					ko += kcols
				}
				var sum float64
				for j, s := range sc {
					e := float32(math.Exp(float64(s - mx)))
					sc[j] = e
					sum += float64(e)
				}
				inv := float32(1 / sum)
				out := y[t*outCols+h*a.DV : t*outCols+(h+1)*a.DV]
				vo := (base+first)*vcols + kh*a.DV
				for _, e := range sc {
					p := e * inv
					vr := vv[vo : vo+len(out)]
					for c, x := range vr {
						out[c] += p * x
					}
					vo += vcols
				}
			}
		}
	})
	return wrap(y, T, outCols)
}
