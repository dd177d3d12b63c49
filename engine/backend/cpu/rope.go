package cpu

import (
	"fmt"
	"math"

	"hsdb/engine/backend"
)

// RoPE rotates each head of x [tokens, Heads*HeadDim] by position (see
// backend.RoPEArgs). The angle pos·inv_freq is formed in float32 and its
// cosine and sine rounded to float32, as HF's rotary embedding does in
// float32.
func (d *Device) RoPE(x backend.Tensor, a *backend.RoPEArgs) backend.Tensor {
	xt := host(x)
	T, cols := xt.Rows(), xt.Cols()
	half := a.HeadDim / 2
	if cols != a.Heads*a.HeadDim || len(a.Pos) != T || len(a.InvFreq) != half || a.HeadDim%2 != 0 {
		panic(&backend.DeviceError{Device: d.name, Op: "rope", Err: fmt.Errorf("x %v for %d heads of %d, %d positions, %d frequencies", xt.Shape, a.Heads, a.HeadDim, len(a.Pos), len(a.InvFreq))})
	}
	xv := f32(x)
	res, y := d.newOutput(false, xt.Shape...) // every head is written whole
	cos := make([]float32, half)
	sin := make([]float32, half)
	for t := range T {
		p := float32(a.Pos[t])
		for i, f := range a.InvFreq {
			ang := float64(p * f)
			cos[i] = float32(math.Cos(ang)) * a.MScale
			sin[i] = float32(math.Sin(ang)) * a.MScale
		}
		for h := range a.Heads {
			off := t*cols + h*a.HeadDim
			src, dst := xv[off:off+a.HeadDim], y[off:off+a.HeadDim]
			if a.Interleaved {
				for i := range half {
					x0, x1 := src[2*i], src[2*i+1]
					dst[2*i] = x0*cos[i] - x1*sin[i]
					dst[2*i+1] = x1*cos[i] + x0*sin[i]
				}
			} else {
				for i := range half {
					x0, x1 := src[i], src[i+half]
					dst[i] = x0*cos[i] - x1*sin[i]
					dst[i+half] = x1*cos[i] + x0*sin[i]
				}
			}
		}
	}
	return res
}
