package backend

// PinnedBuffer is page-locked host memory that a device's DMA engine
// writes directly (CUDA's cuMemHostAlloc): the destination of an
// asynchronous device-to-host copy. Bytes is valid until Free; its
// contents are defined only after the CopyEvent of a copy into it has
// been waited for. Free releases it (a second Free is a no-op).
type PinnedBuffer interface {
	Bytes() []byte
	Free() error
}

// CopyEvent marks the end of an asynchronous copy queued on a device's
// stream; Wait blocks until the copy (and all work queued before it) has
// finished and returns the first asynchronous error of that work. A
// second Wait returns nil at once.
type CopyEvent interface {
	Wait() error
}
