//go:build cuda

package driver

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim_driver.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
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

func check(op string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	return &Error{Op: op, Code: int(r), Name: C.GoString(C.hsdb_cu_error_name(r)), Msg: C.GoString(C.hsdb_cu_error_string(r))}
}

var (
	driverOnce sync.Once
	driverErr  error
)

// libcudaName is the driver library opened by initDriver; HSDB_LIBCUDA
// overrides it (a path or a soname).
func libcudaName() string {
	if s := os.Getenv("HSDB_LIBCUDA"); s != "" {
		return s
	}
	return "libcuda.so.1"
}

// initDriver opens the driver library and calls cuInit once per process.
// It returns an error wrapping ErrNoDriver when the library or one of its
// symbols is missing, ErrNoDevice when cuInit finds no GPU (or only the
// toolkit's stub library is installed), else the *Error of cuInit.
func initDriver() error {
	driverOnce.Do(func() {
		lib := libcudaName()
		cs := C.CString(lib)
		defer C.free(unsafe.Pointer(cs))
		if msg := C.hsdb_cu_open(cs); msg != nil {
			driverErr = fmt.Errorf("%w: opening %s: %s", ErrNoDriver, lib, C.GoString(msg))
			return
		}
		r := C.hsdb_cuInit(0)
		switch r {
		case 0:
		case cuErrNoDevice, cuErrStubLibrary:
			driverErr = fmt.Errorf("%w: %w", ErrNoDevice, check("cuInit", r))
		default:
			driverErr = check("cuInit", r)
		}
	})
	return driverErr
}

// DeviceCount returns the number of CUDA devices the driver sees (after
// CUDA_VISIBLE_DEVICES). It returns the errors of initDriver: ErrNoDriver,
// ErrNoDevice, or a driver *Error.
func DeviceCount() (int, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.hsdb_cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: cuDeviceGetCount found 0 devices", ErrNoDevice)
	}
	return int(n), nil
}

// DriverVersion returns the CUDA version the installed driver supports, as
// cuDriverGetVersion reports it (1000*major + 10*minor: 13000 for 13.0).
func DriverVersion() (int, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	var v C.int
	if err := check("cuDriverGetVersion", C.hsdb_cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// NoGPU reports whether err means there is no usable GPU here.
func NoGPU(err error) bool {
	return errors.Is(err, ErrNoDriver) || errors.Is(err, ErrNoDevice)
}
