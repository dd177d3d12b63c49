package model

import (
	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// RawHoster is a device that copies rows [r0, r1) of a tensor to the host
// in the tensor's own dtype ([r1-r0, cols]; a bf16 activation stays bf16),
// sparing ToHost's conversion to float32. The CUDA backend has it;
// inspect/capture, which may not import backends, uses it through this
// interface when a rank's Device has it.
type RawHoster interface {
	ToHostRaw(t backend.Tensor, r0, r1 int) *tensor.Tensor
}

// AsyncHoster is a device that copies rows of a tensor into pinned host
// memory without waiting for the copy (the CUDA backend: cuMemHostAlloc
// and cuMemcpyDtoHAsync on the rank's stream, then an event): the forward
// pass goes on queueing work while the DMA engine copies, as vLLM's
// KV-connector offload and SGLang's hidden-state dumps do. A batch capture
// (inspect/capture's job) uses it so that a captured layer costs a queued
// copy, not a stop of the pass.
//
// AllocPinned returns n bytes (n > 0) of pinned host memory; pinning is
// slow (milliseconds per hundred MiB), so buffers are allocated once and
// reused. CopyRowsAsync queues the copy of rows [r0, r1) of t, in t's own
// dtype ((r1-r0) · cols · dtype size bytes), into dst at byte offset off,
// after all work queued before it, and returns at once; the bytes are in
// dst.Bytes() after the returned event's Wait. dst must come from this
// device's AllocPinned. Errors: rows outside t, a destination too small, a
// buffer of another device, or the driver's.
type AsyncHoster interface {
	AllocPinned(n int64) (backend.PinnedBuffer, error)
	CopyRowsAsync(t backend.Tensor, r0, r1 int, dst backend.PinnedBuffer, off int64) (backend.CopyEvent, error)
}

// PinnedBuffer is backend.PinnedBuffer, named here for packages above the
// engine that may not import the backends (inspect/capture).
type PinnedBuffer = backend.PinnedBuffer

// CopyEvent is backend.CopyEvent, named here for the same reason.
type CopyEvent = backend.CopyEvent
