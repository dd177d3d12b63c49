//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// isNil reports whether an optional tensor argument is absent (a nil
// interface or a nil *Tensor in one).
func isNil(t backend.Tensor) bool {
	if t == nil {
		return true
	}
	x, ok := t.(*Tensor)
	return ok && x == nil
}

// as returns x's data in dtype dt (GPU thread): x itself when it has dt;
// for a persistent tensor (a weight stored in another float dtype) a copy
// converted once with the cast kernel and kept with x, so later ops reuse
// it and Free(x) frees it too. An activation of the wrong dtype is an
// error: ops never convert activations silently.
func (d *Device) as(x *Tensor, dt tensor.DType) (driver.Ptr, error) {
	if x.dt == dt {
		return x.ptr(), nil
	}
	owner := x.dev
	owner.mu.Lock()
	persistent := x.st.scope == nil
	c := x.st.casts[dt]
	owner.mu.Unlock()
	if !persistent {
		return 0, fmt.Errorf("%w: activation %v has dtype %s where %s was expected", driver.ErrBadArgument, x.shape, x.dt, dt)
	}
	if c != nil {
		return c.ptr(), nil
	}
	c, err := owner.newTensor(dt, x.shape, driver.Weights, false)
	if err != nil {
		return 0, fmt.Errorf("converting weight %v from %s to %s: %w", x.shape, x.dt, dt, err)
	}
	if err := d.g.Cast(c.ptr(), x.ptr(), int64(x.numel()), x.dt, dt); err != nil {
		owner.Free(c)
		return 0, fmt.Errorf("converting weight %v from %s to %s: %w", x.shape, x.dt, dt, err)
	}
	owner.mu.Lock()
	if x.st.casts == nil {
		x.st.casts = map[tensor.DType]*Tensor{}
	}
	x.st.casts[dt] = c
	owner.mu.Unlock()
	return c.ptr(), nil
}

// sameShape checks that a and b have the same element count, rows and
// dtype (the CPU backend's rule for elementwise ops).
func (d *Device) sameShape(op string, a, b *Tensor) {
	if a.numel() != b.numel() || a.rows() != b.rows() || a.dt != b.dt {
		d.badArg(op, "tensors %v %s and %v %s differ", a.shape, a.dt, b.shape, b.dt)
	}
}

// Embedding looks up ids in table [vocabShard, hidden] whose row 0 is id
// start; ids outside [start, start+vocabShard) give zero rows (vLLM
// VocabParallelEmbedding). Out: [tokens, hidden] in ActDType.
func (d *Device) Embedding(table backend.Tensor, ids []int32, start int) backend.Tensor {
	const op = "embedding"
	tt := d.get(op, table)
	d.float(op, tt)
	V, H := tt.rows(), tt.cols()
	if start < 0 || int64(start)+int64(V) > 1<<31-1 {
		d.badArg(op, "vocab shard [%d, %d)", start, start+V)
	}
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(d.act, len(ids), H); err != nil || len(ids) == 0 || H == 0 {
			return err
		}
		tp, err := d.as(tt, d.act)
		if err != nil {
			return err
		}
		idp, err := d.uploadI32(ids)
		if err != nil {
			return err
		}
		return d.g.Embedding(y.ptr(), idp, tp, len(ids), H, start, start+V, d.act)
	})
	return y
}

// Linear computes y = x·Wᵀ + b with cuBLAS (f32 accumulation, one
// rounding: the bias is broadcast into y first and the GEMM adds x·Wᵀ with
// beta = 1, as PyTorch's addmm). x [tokens, in], w [out, in], b [out] or
// nil; w and b are converted to x's dtype if stored otherwise. Out:
// [tokens, out] in x's dtype.
func (d *Device) Linear(x, w, b backend.Tensor) backend.Tensor {
	const op = "linear"
	xt, wt := d.get(op, x), d.get(op, w)
	if fp8Of(wt) != nil {
		return d.linearFP8(op, xt, wt, b)
	}
	if int4Of(wt) != nil {
		return d.linearInt4(op, xt, wt, b)
	}
	d.float(op, xt)
	d.float(op, wt)
	T, in := xt.rows(), xt.cols()
	out := wt.rows()
	if wt.cols() != in {
		d.badArg(op, "x %v and weight %v: inner dims %d != %d", xt.shape, wt.shape, in, wt.cols())
	}
	var bt *Tensor
	if !isNil(b) {
		bt = d.get(op, b)
		d.float(op, bt)
		if bt.numel() != out {
			d.badArg(op, "bias %v for %d outputs", bt.shape, out)
		}
	}
	dt := xt.dt
	es := int64(dt.Size())
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(dt, T, out); err != nil || T == 0 || out == 0 {
			return err
		}
		beta := float32(0)
		if bt != nil {
			bp, err := d.as(bt, dt)
			if err != nil {
				return err
			}
			if err := d.g.Copy2D(y.ptr(), int64(out)*es, bp, 0, T, int64(out)*es); err != nil {
				return err
			}
			beta = 1
		}
		if in == 0 {
			if bt == nil {
				return d.g.Memset(y.ptr(), 0, y.st.bytes)
			}
			return nil
		}
		wp, err := d.as(wt, dt)
		if err != nil {
			return err
		}
		return d.g.MatMul(driver.GEMM{M: T, N: out, K: in, TransB: true, Alpha: 1, Beta: beta, In: dt, Out: dt}, y.ptr(), xt.ptr(), wp)
	})
	return y
}

// LinearF32 computes y = x·Wᵀ in float32 (backend.Device.LinearF32). For
// a bf16 or f16 x and a weight stored in the same dtype it is one cuBLAS
// GEMM of those inputs with float32 output and float32 accumulation: the
// product of two 16-bit floats is exact in float32, so that is the GEMM of
// the widened operands, without the widened copies (HF's router logits,
// F.linear(x.float(), w.float())). Otherwise it is Linear(ToF32(x), w).
func (d *Device) LinearF32(x, w backend.Tensor) backend.Tensor {
	const op = "linear_f32"
	xt, wt := d.get(op, x), d.get(op, w)
	if xt.dt == tensor.F32 || wt.dt != xt.dt {
		return d.Linear(d.ToF32(x), w, nil)
	}
	d.float(op, xt)
	T, in, out := xt.rows(), xt.cols(), wt.rows()
	if wt.cols() != in {
		d.badArg(op, "x %v and weight %v: inner dims %d != %d", xt.shape, wt.shape, in, wt.cols())
	}
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(tensor.F32, T, out); err != nil || T == 0 || out == 0 {
			return err
		}
		if in == 0 {
			return d.g.Memset(y.ptr(), 0, y.st.bytes)
		}
		return d.g.MatMul(driver.GEMM{M: T, N: out, K: in, TransB: true, Alpha: 1, In: xt.dt, Out: tensor.F32}, y.ptr(), xt.ptr(), wt.ptr())
	})
	return y
}

// RMSNorm computes y = x / sqrt(mean(x²) + eps) · w over each row of x
// [rows, n], w [n], in f32 with one rounding (HF LlamaRMSNorm). Out: x's
// shape and dtype.
func (d *Device) RMSNorm(x, w backend.Tensor, eps float32) backend.Tensor {
	const op = "rmsnorm"
	xt, wt := d.get(op, x), d.get(op, w)
	d.float(op, xt)
	d.float(op, wt)
	if wt.numel() != xt.cols() {
		d.badArg(op, "weight of %d elements for rows of %d", wt.numel(), xt.cols())
	}
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(xt.dt, xt.shape...); err != nil || xt.numel() == 0 {
			return err
		}
		wp, err := d.as(wt, xt.dt)
		if err != nil {
			return err
		}
		return d.g.RMSNorm(y.ptr(), xt.ptr(), wp, xt.rows(), xt.cols(), eps, xt.dt)
	})
	return y
}

// AddRMSNorm is vLLM's fused add + RMSNorm: sum = x + residual (rounded
// to the dtype), y = RMSNorm(sum)·w. It returns (y, sum).
func (d *Device) AddRMSNorm(x, residual, w backend.Tensor, eps float32) (backend.Tensor, backend.Tensor) {
	const op = "add_rmsnorm"
	xt, rt, wt := d.get(op, x), d.get(op, residual), d.get(op, w)
	d.float(op, xt)
	d.float(op, wt)
	d.sameShape(op, xt, rt)
	if wt.numel() != xt.cols() {
		d.badArg(op, "weight of %d elements for rows of %d", wt.numel(), xt.cols())
	}
	var y, sum *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(xt.dt, xt.shape...); err != nil {
			return err
		}
		if sum, err = d.output(xt.dt, xt.shape...); err != nil || xt.numel() == 0 {
			return err
		}
		wp, err := d.as(wt, xt.dt)
		if err != nil {
			return err
		}
		return d.g.AddRMSNorm(y.ptr(), sum.ptr(), xt.ptr(), rt.ptr(), wp, xt.rows(), xt.cols(), eps, xt.dt)
	})
	return y, sum
}

// Add returns a + b elementwise.
func (d *Device) Add(a, b backend.Tensor) backend.Tensor {
	const op = "add"
	at, bt := d.get(op, a), d.get(op, b)
	d.float(op, at)
	d.sameShape(op, at, bt)
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(at.dt, at.shape...); err != nil || at.numel() == 0 {
			return err
		}
		return d.g.Add(y.ptr(), at.ptr(), bt.ptr(), int64(at.numel()), at.dt)
	})
	return y
}

// Scale returns a · s elementwise.
func (d *Device) Scale(a backend.Tensor, s float32) backend.Tensor {
	const op = "scale"
	at := d.get(op, a)
	d.float(op, at)
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(at.dt, at.shape...); err != nil || at.numel() == 0 {
			return err
		}
		return d.g.Scale(y.ptr(), at.ptr(), s, int64(at.numel()), at.dt)
	})
	return y
}

// ToF32 returns x converted to float32, a scoped activation (x itself when
// it is float32 already).
func (d *Device) ToF32(x backend.Tensor) backend.Tensor {
	const op = "to_f32"
	xt := d.get(op, x)
	d.float(op, xt)
	if xt.dt == tensor.F32 {
		return x
	}
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(tensor.F32, xt.shape...); err != nil || xt.numel() == 0 {
			return err
		}
		return d.g.Cast(y.ptr(), xt.ptr(), int64(xt.numel()), xt.dt, tensor.F32)
	})
	return y
}

// SiluMul returns silu(gate)·up elementwise, silu(g) = g/(1+e^-g) (vLLM
// SiluAndMul).
func (d *Device) SiluMul(gate, up backend.Tensor) backend.Tensor {
	const op = "silu_mul"
	gt, ut := d.get(op, gate), d.get(op, up)
	d.float(op, gt)
	d.sameShape(op, gt, ut)
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(gt.dt, gt.shape...); err != nil || gt.numel() == 0 {
			return err
		}
		c := gt.cols()
		return d.g.SiluMul(y.ptr(), gt.ptr(), ut.ptr(), gt.rows(), c, c, c, gt.dt)
	})
	return y
}

// RoPE returns x [tokens, Heads*HeadDim] (or [tokens, Heads*Stride])
// rotated as backend.RoPEArgs says (a copy of x rotated in place by
// kernels/rope.cu).
func (d *Device) RoPE(x backend.Tensor, a *backend.RoPEArgs) backend.Tensor {
	const op = "rope"
	xt := d.get(op, x)
	d.float(op, xt)
	if err := a.Check(xt.rows(), xt.cols()); err != nil {
		d.badArg(op, "%v", err)
	}
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(xt.dt, xt.shape...); err != nil || xt.rows() == 0 {
			return err
		}
		if err := d.g.CopyDevice(y.ptr(), xt.ptr(), y.st.bytes); err != nil {
			return err
		}
		return d.rope(y, a)
	})
	return y
}

// RoPEInPlace rotates x as RoPE does, in place.
func (d *Device) RoPEInPlace(x backend.Tensor, a *backend.RoPEArgs) {
	const op = "rope"
	xt := d.get(op, x)
	d.float(op, xt)
	if err := a.Check(xt.rows(), xt.cols()); err != nil {
		d.badArg(op, "%v", err)
	}
	if xt.rows() == 0 {
		return
	}
	d.do(op, func() error { return d.rope(xt, a) })
}

// rope rotates x in place (GPU thread).
func (d *Device) rope(x *Tensor, a *backend.RoPEArgs) error {
	pos, err := d.uploadI32(a.Pos)
	if err != nil {
		return err
	}
	inv, err := d.uploadF32(a.InvFreq)
	if err != nil {
		return err
	}
	return d.g.RoPE(x.ptr(), pos, inv, RoPEParams{Tokens: x.rows(), Heads: a.Heads, RowStride: x.cols(), HeadStride: a.HeadStride(),
		RotOffset: a.Offset, RotDim: a.HeadDim, Interleaved: a.Interleaved, MScale: a.MScale}, x.dt)
}

// SliceCols copies columns [c0, c1) of x [rows, cols] to a new tensor
// [rows, c1-c0] of x's dtype.
func (d *Device) SliceCols(x backend.Tensor, c0, c1 int) backend.Tensor {
	const op = "slice_cols"
	xt := d.get(op, x)
	rows, cols := xt.rows(), xt.cols()
	if c0 < 0 || c1 > cols || c0 > c1 {
		d.badArg(op, "columns [%d, %d) of %v", c0, c1, xt.shape)
	}
	es := int64(xt.dt.Size())
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(xt.dt, rows, c1-c0); err != nil {
			return err
		}
		return d.g.Copy2D(y.ptr(), int64(c1-c0)*es, xt.ptr().Add(int64(c0)*es), int64(cols)*es, rows, int64(c1-c0)*es)
	})
	return y
}

// ConcatCols joins tensors of equal rows and dtype along columns.
func (d *Device) ConcatCols(xs ...backend.Tensor) backend.Tensor {
	const op = "concat_cols"
	if len(xs) == 0 {
		d.badArg(op, "no tensors")
	}
	ts := make([]*Tensor, len(xs))
	total := 0
	for i, x := range xs {
		ts[i] = d.get(op, x)
		if ts[i].rows() != ts[0].rows() || ts[i].dt != ts[0].dt {
			d.badArg(op, "tensor %d is %v %s, tensor 0 %v %s", i, ts[i].shape, ts[i].dt, ts[0].shape, ts[0].dt)
		}
		total += ts[i].cols()
	}
	rows, dt := ts[0].rows(), ts[0].dt
	es := int64(dt.Size())
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(dt, rows, total); err != nil {
			return err
		}
		off := int64(0)
		for _, t := range ts {
			c := int64(t.cols())
			if err := d.g.Copy2D(y.ptr().Add(off*es), int64(total)*es, t.ptr(), c*es, rows, c*es); err != nil {
				return err
			}
			off += c
		}
		return nil
	})
	return y
}
