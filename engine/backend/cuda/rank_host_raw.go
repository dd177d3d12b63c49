//go:build cuda

package cuda

import (
	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// ToHostRaw copies rows [r0, r1) of t to the host in t's own dtype,
// [r1-r0, cols] — the bytes a capture written in the activation dtype
// stores (a bf16 stream stays bf16), without ToHost's conversion to
// float32, which for a Llama-3-8B batch of 4096 tokens costs more host
// time than the copy. inspect/capture uses it when the device has it.
// Errors panic with a *backend.DeviceError, as ToHost's do.
func (d *Device) ToHostRaw(t backend.Tensor, r0, r1 int) *tensor.Tensor {
	const op = "to_host"
	x := d.get(op, t)
	d.checkSlice(op, x, r0, r1, 0, x.cols())
	h := tensor.New(x.dt, r1-r0, x.cols())
	if len(h.Data) > 0 {
		row := int64(x.cols() * x.dt.Size())
		d.do(op, func() error { return d.g.CopyToHost(h.Data, x.ptr().Add(int64(r0)*row)) })
	}
	return h
}
