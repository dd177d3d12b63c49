package cpu

import (
	"math"
	"slices"

	"hsdb/engine/backend"
)

// RoPE rotates each head of x [tokens, Heads*HeadDim] f32 by position (see
// backend.RoPEArgs; with Stride, only each head's HeadDim columns from
// Offset rotate and the others are copied); out has x's shape, f32. The
// angle pos·inv_freq is formed in float32 and its cosine and sine rounded
// to float32, as HF's rotary embedding does in float32; the device keeps
// them for the next call with the same positions (ropeCache).
func (d *Device) RoPE(x backend.Tensor, a *backend.RoPEArgs) backend.Tensor {
	xt := host(x)
	d.checkRoPE(xt.Rows(), xt.Cols(), a)
	res, y := d.newOutput(false, xt.Shape...) // every element is written
	copy(y, f32(x))
	d.rotate(y, xt.Rows(), xt.Cols(), a)
	return res
}

// RoPEInPlace rotates x as RoPE does, in place.
func (d *Device) RoPEInPlace(x backend.Tensor, a *backend.RoPEArgs) {
	xt := host(x)
	d.checkRoPE(xt.Rows(), xt.Cols(), a)
	d.rotate(f32(x), xt.Rows(), xt.Cols(), a)
}

func (d *Device) checkRoPE(T, cols int, a *backend.RoPEArgs) {
	if err := a.Check(T, cols); err != nil {
		panic(&backend.DeviceError{Device: d.name, Op: "rope", Err: err})
	}
}

// rotate rotates the heads of y [T, cols] in place.
func (d *Device) rotate(y []float32, T, cols int, a *backend.RoPEArgs) {
	half, stride := a.HeadDim/2, a.HeadStride()
	cos, sin := d.rope.angles(a)
	for t := range T {
		cos, sin := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
		for h := range a.Heads {
			off := t*cols + h*stride + a.Offset
			v := y[off : off+a.HeadDim]
			if a.Interleaved {
				for i := range half {
					x0, x1 := v[2*i], v[2*i+1]
					v[2*i] = x0*cos[i] - x1*sin[i]
					v[2*i+1] = x1*cos[i] + x0*sin[i]
				}
			} else {
				for i := range half {
					x0, x1 := v[i], v[i+half]
					v[i] = x0*cos[i] - x1*sin[i]
					v[i+half] = x1*cos[i] + x0*sin[i]
				}
			}
		}
	}
}

// ropeCache keeps the cos and sin of the last RoPE call: every layer's q and
// k of a step rotate by the same positions and frequencies, so a decode step
// computes them once instead of twice per layer.
type ropeCache struct {
	pos      []int32
	invFreq  []float32
	mscale   float32
	cos, sin []float32 // [tokens, HeadDim/2], times mscale
}

// ropeCacheMax is the most cos (and sin) values kept between calls; larger
// tables (long prefills) are computed per call.
const ropeCacheMax = 1 << 16

// angles returns cos(pos·f)·MScale and sin(pos·f)·MScale for every token
// and frequency of a ([tokens, HeadDim/2] each): the angle is formed in
// float32, its cosine and sine taken in float64 and rounded to float32, as
// HF's float32 rotary embedding. They come from the cache when a has the
// same positions, frequencies and scale as the call that filled it.
func (c *ropeCache) angles(a *backend.RoPEArgs) (cos, sin []float32) {
	half, T := len(a.InvFreq), len(a.Pos)
	if c.mscale == a.MScale && slices.Equal(c.pos, a.Pos) && slices.Equal(c.invFreq, a.InvFreq) && len(c.cos) == T*half {
		return c.cos, c.sin
	}
	cos, sin = make([]float32, T*half), make([]float32, T*half)
	for t, p := range a.Pos {
		for i, f := range a.InvFreq {
			ang := float64(float32(p) * f)
			cos[t*half+i] = float32(math.Cos(ang)) * a.MScale
			sin[t*half+i] = float32(math.Sin(ang)) * a.MScale
		}
	}
	if T*half <= ropeCacheMax {
		c.pos = append(c.pos[:0], a.Pos...)
		c.invFreq = append(c.invFreq[:0], a.InvFreq...)
		c.mscale, c.cos, c.sin = a.MScale, cos, sin
	}
	return cos, sin
}
