//go:build cuda

package driver

// The C shims (shim_*.c) open libraries with dlopen in every build.

// #cgo LDFLAGS: -ldl
import "C"

import (
	"errors"
	"fmt"
)

// CUresult codes hsdb tests for (cuda.h, enum cudaError_enum).
const (
	cuErrOutOfMemory = 2
	cuErrNoDevice    = 100
	cuErrStubLibrary = 34
)

// Error is a failed CUDA driver call: Op names the call ("cuMemAlloc"),
// Code is the CUresult, Name and Msg its cuGetErrorName / cuGetErrorString
// text.
type Error struct {
	Op   string
	Code int
	Name string
	Msg  string
}

// Error formats "OP: NAME (CODE): MESSAGE", e.g. "cuMemAlloc:
// CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Op, e.Name, e.Code, e.Msg)
}

// DeviceCount returns the number of CUDA devices the driver sees (after
// CUDA_VISIBLE_DEVICES). It returns the errors of the driver's init: ErrNoDriver,
// ErrNoDevice, or a driver *Error.
func DeviceCount() (int, error) {
	if err := drv.init(); err != nil {
		return 0, err
	}
	n, err := drv.deviceCount()
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: cuDeviceGetCount found 0 devices", ErrNoDevice)
	}
	return n, nil
}

// DriverVersion returns the CUDA version the installed driver supports, as
// cuDriverGetVersion reports it (1000*major + 10*minor: 13000 for 13.0).
func DriverVersion() (int, error) {
	if err := drv.init(); err != nil {
		return 0, err
	}
	return drv.driverVersion()
}

// NoGPU reports whether err means there is no usable GPU here.
func NoGPU(err error) bool {
	return errors.Is(err, ErrNoDriver) || errors.Is(err, ErrNoDevice)
}

// ContextLost reports whether err holds a driver error after which the
// process's CUDA context is unusable: cuda.h documents codes 700
// (ILLEGAL_ADDRESS), 702 (LAUNCH_TIMEOUT), 710 (ASSERT), 714-719
// (HARDWARE_STACK_ERROR, ILLEGAL_INSTRUCTION, MISALIGNED_ADDRESS,
// INVALID_ADDRESS_SPACE, INVALID_PC, LAUNCH_FAILED) with "the process must
// be terminated and relaunched". A CUDA worker ends on such an error so
// that the session's next run starts a fresh one.
func ContextLost(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case 700, 702, 710, 714, 715, 716, 717, 718, 719:
		return true
	}
	return false
}
