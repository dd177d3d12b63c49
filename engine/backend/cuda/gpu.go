//go:build cuda

package cuda

import "hsdb/engine/backend/cuda/driver"

// GPU is a driver.GPU with hsdb's kernels: the typed launch wrappers of
// ops.go, attention.go, flash.go, softmax.go, stats.go and copy.go are its
// methods, and everything of the driver (Do, Alloc, copies, MatMul, the
// pool's accounting) is reached through the embedded *driver.GPU. Any
// number of GPU values may wrap one driver.GPU.
type GPU struct{ *driver.GPU }

// sharedGPU returns driver.SharedGPU(ordinal) with hsdb's kernels.
func sharedGPU(ordinal int) (*GPU, error) {
	g, err := driver.SharedGPU(ordinal)
	if err != nil {
		return nil, err
	}
	return &GPU{g}, nil
}

// dim3 is the launch geometry the op wrappers write (keyed: dim3{x: n});
// a zero y or z is 1.
type dim3 struct{ x, y, z uint32 }

// launch runs kernel mod/fn of package kernels with grid and block
// (driver.GPU.Launch; device thread only).
func (d *GPU) launch(mod, fn string, grid, block dim3, smem int, args ...any) error {
	return d.Launch(mod, fn, driver.Dim3{X: grid.x, Y: grid.y, Z: grid.z}, driver.Dim3{X: block.x, Y: block.y, Z: block.z}, smem, args...)
}
