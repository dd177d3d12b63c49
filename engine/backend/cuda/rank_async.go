//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
)

// AllocHost returns n bytes of pinned host memory on the rank's GPU, the
// destination of CopyRowsToHost (GPU.AllocHost). Pinning is slow
// (milliseconds per hundred MiB): allocate capture buffers once, before
// the forward pass.
func (d *Device) AllocHost(n int64) (*driver.HostBuffer, error) {
	if d.g == nil {
		return nil, fmt.Errorf("%s: %w", d.name, driver.ErrNoDevice)
	}
	return d.g.AllocHost(n)
}

// CopyRowsToHost queues a copy of rows [r0, r1) of t, in t's own dtype
// (the bytes a dump writes), into dst at byte offset off and returns at
// once: the forward pass goes on while the DMA engine copies, and the
// bytes are in dst after the returned Event's Wait. This is what a capture
// of `stream` at several layers uses so that it costs a copy, not a stop.
// Errors wrap ErrBadArgument for rows outside t or a destination too
// small, or are the driver's.
func (d *Device) CopyRowsToHost(t backend.Tensor, r0, r1 int, dst *driver.HostBuffer, off int64) (*driver.Event, error) {
	x, ok := t.(*Tensor)
	if !ok || x == nil || x.st.freed.Load() {
		return nil, fmt.Errorf("%w: %s: copy to host: %T is not a live CUDA tensor", driver.ErrBadArgument, d.name, t)
	}
	if r0 < 0 || r1 > x.rows() || r0 > r1 {
		return nil, fmt.Errorf("%w: %s: copy to host: rows [%d, %d) of %v", driver.ErrBadArgument, d.name, r0, r1, x.shape)
	}
	rb := int64(x.cols() * x.dt.Size())
	var ev *driver.Event
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				if de, ok := p.(*backend.DeviceError); ok {
					err = de
					return
				}
				panic(p)
			}
		}()
		d.do("copy_to_host", func() error {
			var e error
			ev, e = x.dev.g.CopyToHostAsync(dst, off, x.ptr().Add(int64(r0)*rb), int64(r1-r0)*rb)
			return e
		})
	}()
	return ev, err
}
