//go:build cuda

package engine

import (
	"errors"
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

func init() { newCUDADevices = cudaDevices }

// cudaDevices makes world CUDA ranks computing in act (cuda.NewRanks: one
// rank per GPU under NCCL, or every rank on GPU 0 with in-process
// collectives). No usable GPU or driver is reported as ErrDevice.
func cudaDevices(world int, act tensor.DType) ([]backend.Device, []backend.Comm, *backend.Group, error) {
	devs, comms, g, err := cuda.NewRanks(world, act)
	if err != nil {
		if errors.Is(err, driver.ErrNoDriver) || errors.Is(err, driver.ErrNoDevice) {
			return nil, nil, nil, fmt.Errorf("%w: --device cuda: %w", ErrDevice, err)
		}
		return nil, nil, nil, fmt.Errorf("--device cuda: %w", err)
	}
	ds := make([]backend.Device, world)
	cs := make([]backend.Comm, world)
	for r := range world {
		ds[r], cs[r] = devs[r], comms[r]
	}
	return ds, cs, g, nil
}
