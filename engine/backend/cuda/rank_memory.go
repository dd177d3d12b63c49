//go:build cuda

package cuda

import "hsdb/engine/backend/cuda/driver"

// block is one allocation handed back to a memory.
type block struct {
	ptr   driver.Ptr
	class driver.MemClass
}

// memory is what a rank Device's bookkeeping needs beneath it: stream-
// ordered allocation, release, zero-fill and upload. gpuMemory implements
// it over a GPU's caching pool; the tests of scopes and argument checks use
// a fake, so that logic is exercised on machines without a GPU.
type memory interface {
	// alloc returns n > 0 bytes for class c, or an *OOMError.
	alloc(n int64, c driver.MemClass) (driver.Ptr, error)
	// free returns blocks to the pool (stream-ordered: queued work that
	// still reads them completes first).
	free(bs []block) error
	// zero sets n bytes at p to 0.
	zero(p driver.Ptr, n int64) error
	// copyIn copies src to p; src may be reused when it returns.
	copyIn(p driver.Ptr, src []byte) error
}

// gpuMemory is memory on a GPU: its pool and stream. Every call runs on the
// GPU's thread (inline when already there, as inside an op).
type gpuMemory struct{ g *GPU }

func (m gpuMemory) alloc(n int64, c driver.MemClass) (driver.Ptr, error) {
	return m.g.AllocBlock(n, c)
}

func (m gpuMemory) free(bs []block) error {
	return m.g.Do(func() error {
		var first error
		for _, b := range bs {
			if b.ptr == 0 {
				continue
			}
			if err := m.g.FreeBlock(b.ptr, b.class); err != nil && first == nil {
				first = err
			}
		}
		return first
	})
}

func (m gpuMemory) zero(p driver.Ptr, n int64) error      { return m.g.Memset(p, 0, n) }
func (m gpuMemory) copyIn(p driver.Ptr, src []byte) error { return m.g.CopyToDevice(p, src) }
