//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
)

// AllocPinned is AllocHost behind backend.PinnedBuffer: the device's half
// of model.AsyncHoster, which inspect/capture's batch job uses for its
// asynchronous copies of captured layers.
func (d *Device) AllocPinned(n int64) (backend.PinnedBuffer, error) {
	h, err := d.AllocHost(n)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// CopyRowsAsync is CopyRowsToHost behind model.AsyncHoster: rows [r0, r1)
// of t, in t's own dtype, queued for copying into dst (which must be a
// buffer from AllocPinned) at byte offset off; the bytes are there after
// the returned event's Wait. Errors wrap driver.ErrBadArgument for another
// kind of buffer, rows outside t or a destination too small, or are the
// driver's.
func (d *Device) CopyRowsAsync(t backend.Tensor, r0, r1 int, dst backend.PinnedBuffer, off int64) (backend.CopyEvent, error) {
	h, ok := dst.(*driver.HostBuffer)
	if !ok || h == nil {
		return nil, fmt.Errorf("%w: %s: copy to host: %T is not a pinned buffer of this backend", driver.ErrBadArgument, d.name, dst)
	}
	ev, err := d.CopyRowsToHost(t, r0, r1, h, off)
	if err != nil {
		return nil, err
	}
	return ev, nil
}
