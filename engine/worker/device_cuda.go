//go:build cuda

package worker

import (
	"errors"
	"fmt"
	"os"

	"hsdb/engine"
	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda"
	"hsdb/engine/backend/cuda/driver"
)

func init() {
	newCUDADevice = cudaWorkerDevice
	contextLost = driver.ContextLost
	injectKernelFault = launchOutOfBounds
}

// unmappedAddress is a device address no allocation holds (the top of the
// 47-bit user address space the driver maps from below).
const unmappedAddress = driver.Ptr(1<<47 - 1<<20)

// launchOutOfBounds launches a one-element copy2d (kernels/copy.cu) whose
// destination is unmappedAddress on dev's stream and waits for it: the
// kernel faults and the synchronisation returns CUDA_ERROR_ILLEGAL_ADDRESS
// at the site that launched it (KernelFaultEnv, tests only).
func launchOutOfBounds(dev backend.Device) error {
	d, ok := dev.(*cuda.Device)
	if !ok {
		return fmt.Errorf("%s: %s is only for CUDA workers", KernelFaultEnv, dev.Name())
	}
	g := d.GPU()
	return g.Do(func() error {
		if err := g.Launch("copy", "copy2d_u8", driver.Dim3{X: 1}, driver.Dim3{X: 1}, 0,
			unmappedAddress, unmappedAddress, int64(1), int64(1), int64(1), int64(1)); err != nil {
			return err
		}
		return g.Synchronize()
	})
}

// cudaWorkerDevice makes the worker's CUDA device: GPU slot when the
// machine has a GPU per worker, else GPU 0 for every worker (as the
// in-process virtual ranks share one GPU; HSDB_CUDA_VIRTUAL=1 forces it).
// The collectives go through the front (host-staged), not NCCL.
func cudaWorkerDevice(a *assign) (backend.Device, error) {
	count, err := driver.DeviceCount()
	if err != nil {
		if errors.Is(err, driver.ErrNoDriver) || errors.Is(err, driver.ErrNoDevice) {
			return nil, fmt.Errorf("%w: --device cuda: %w", engine.ErrDevice, err)
		}
		return nil, err
	}
	ordinal := 0
	if n := a.World * a.Stages; n <= count && os.Getenv("HSDB_CUDA_VIRTUAL") != "1" {
		ordinal = a.Slot
	}
	name := fmt.Sprintf("cuda:%d", ordinal)
	if ordinal == 0 && a.World*a.Stages > 1 && (a.World*a.Stages > count || os.Getenv("HSDB_CUDA_VIRTUAL") == "1") {
		name = fmt.Sprintf("cuda:0/rank%d", a.Slot)
	}
	d, err := cuda.NewWorkerDevice(ordinal, name, a.Rank, a.ActDType)
	if err != nil {
		return nil, fmt.Errorf("--device cuda: %w", err)
	}
	return d, nil
}
