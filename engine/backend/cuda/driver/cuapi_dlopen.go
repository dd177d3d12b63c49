//go:build cuda && !cu

package driver

/*
#include <stdlib.h>
#include "shim_driver.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// api is the driver API over libcuda.so.1 opened with dlopen (see cuAPI).
type api struct{}

var _ cuAPI = api{}

// The handles are the C ones of shim_driver.h.
type (
	cuDevice   = C.CUdevice
	cuContext  = C.CUcontext
	cuStream   = C.CUstream
	cuEvent    = C.CUevent
	cuModule   = C.CUmodule
	cuFunction = C.CUfunction
)

// rawStream is s as the C shims of cuBLAS, NCCL and the MoE streams take
// it.
func rawStream(s cuStream) C.CUstream { return s }

// DriverAPI names the implementation of the driver API this binary uses.
const DriverAPI = "libcuda.so.1 via dlopen"

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

// libcudaName is the driver library opened by init; HSDB_LIBCUDA
// overrides it (a path or a soname).
func libcudaName() string {
	if s := os.Getenv("HSDB_LIBCUDA"); s != "" {
		return s
	}
	return "libcuda.so.1"
}

// init opens the driver library and calls cuInit once per process. It
// returns an error wrapping ErrNoDriver when the library or one of its
// symbols is missing, ErrNoDevice when cuInit finds no GPU (or only the
// toolkit's stub library is installed), else the *Error of cuInit.
func (api) init() error {
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

func (api) deviceCount() (int, error) {
	var n C.int
	err := check("cuDeviceGetCount", C.hsdb_cuDeviceGetCount(&n))
	return int(n), err
}

func (api) driverVersion() (int, error) {
	var v C.int
	err := check("cuDriverGetVersion", C.hsdb_cuDriverGetVersion(&v))
	return int(v), err
}

func (api) device(ordinal int) (cuDevice, error) {
	var d C.CUdevice
	err := check("cuDeviceGet", C.hsdb_cuDeviceGet(&d, C.int(ordinal)))
	return d, err
}

func (api) deviceName(d cuDevice) (string, error) {
	var name [256]C.char
	if err := check("cuDeviceGetName", C.hsdb_cuDeviceGetName(&name[0], 256, d)); err != nil {
		return "", err
	}
	return C.GoString(&name[0]), nil
}

func (api) deviceTotalMem(d cuDevice) (int64, error) {
	var total C.size_t
	err := check("cuDeviceTotalMem", C.hsdb_cuDeviceTotalMem(&total, d))
	return int64(total), err
}

func (api) deviceAttribute(d cuDevice, attr int) (int, error) {
	var v C.int
	err := check("cuDeviceGetAttribute", C.hsdb_cuDeviceGetAttribute(&v, C.CUdevice_attribute(attr), d))
	return int(v), err
}

func (api) primaryCtxRetain(d cuDevice) (cuContext, error) {
	var c C.CUcontext
	err := check("cuDevicePrimaryCtxRetain", C.hsdb_cuDevicePrimaryCtxRetain(&c, d))
	return c, err
}

func (api) primaryCtxRelease(d cuDevice) error {
	return check("cuDevicePrimaryCtxRelease", C.hsdb_cuDevicePrimaryCtxRelease(d))
}

func (api) ctxSetCurrent(c cuContext) error {
	return check("cuCtxSetCurrent", C.hsdb_cuCtxSetCurrent(c))
}

func (api) memGetInfo() (free, total int64, err error) {
	var f, t C.size_t
	err = check("cuMemGetInfo", C.hsdb_cuMemGetInfo(&f, &t))
	return int64(f), int64(t), err
}

func (api) memAlloc(n int64) (Ptr, error) {
	var p C.CUdeviceptr
	err := check("cuMemAlloc", C.hsdb_cuMemAlloc(&p, C.size_t(n)))
	return Ptr(p), err
}

func (api) memFree(p Ptr) error {
	return check("cuMemFree", C.hsdb_cuMemFree(C.CUdeviceptr(p)))
}

func (api) memHostAlloc(n int64) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := check("cuMemHostAlloc", C.hsdb_cuMemHostAlloc(&p, C.size_t(n), 1)) // CU_MEMHOSTALLOC_PORTABLE
	return p, err
}

func (api) memFreeHost(p unsafe.Pointer) error {
	return check("cuMemFreeHost", C.hsdb_cuMemFreeHost(p))
}

func (api) copyHtoDAsync(dst Ptr, src unsafe.Pointer, n int64, s cuStream) error {
	return check("cuMemcpyHtoDAsync", C.hsdb_cuMemcpyHtoDAsync(C.CUdeviceptr(dst), src, C.size_t(n), s))
}

func (api) copyDtoHAsync(dst unsafe.Pointer, src Ptr, n int64, s cuStream) error {
	return check("cuMemcpyDtoHAsync", C.hsdb_cuMemcpyDtoHAsync(dst, C.CUdeviceptr(src), C.size_t(n), s))
}

func (api) copyDtoDAsync(dst, src Ptr, n int64, s cuStream) error {
	return check("cuMemcpyDtoDAsync", C.hsdb_cuMemcpyDtoDAsync(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), s))
}

func (api) memsetD8Async(dst Ptr, v byte, n int64, s cuStream) error {
	return check("cuMemsetD8Async", C.hsdb_cuMemsetD8Async(C.CUdeviceptr(dst), C.uchar(v), C.size_t(n), s))
}

func (api) streamCreate() (cuStream, error) {
	var s C.CUstream
	err := check("cuStreamCreate", C.hsdb_cuStreamCreate(&s, 1)) // CU_STREAM_NON_BLOCKING
	return s, err
}

func (api) streamDestroy(s cuStream) error {
	return check("cuStreamDestroy", C.hsdb_cuStreamDestroy(s))
}

func (api) streamSynchronize(s cuStream) error {
	return check("cuStreamSynchronize", C.hsdb_cuStreamSynchronize(s))
}

func (api) eventCreate(timing bool) (cuEvent, error) {
	flags := C.uint(2) // CU_EVENT_DISABLE_TIMING
	if timing {
		flags = 0
	}
	var e C.CUevent
	err := check("cuEventCreate", C.hsdb_cuEventCreate(&e, flags))
	return e, err
}

func (api) eventRecord(e cuEvent, s cuStream) error {
	return check("cuEventRecord", C.hsdb_cuEventRecord(e, s))
}

func (api) eventSynchronize(e cuEvent) error {
	return check("cuEventSynchronize", C.hsdb_cuEventSynchronize(e))
}

func (api) eventElapsed(a, b cuEvent) (float64, error) {
	var ms C.float
	err := check("cuEventElapsedTime", C.hsdb_cuEventElapsedTime(&ms, a, b))
	return float64(ms), err
}

func (api) eventDestroy(e cuEvent) error {
	return check("cuEventDestroy", C.hsdb_cuEventDestroy(e))
}

func (api) moduleLoadPTX(ptx string) (cuModule, string, error) {
	cs := C.CString(ptx)
	defer C.free(unsafe.Pointer(cs))
	var log [8192]C.char
	var m C.CUmodule
	if err := check("cuModuleLoadDataEx", C.hsdb_load_module(&m, cs, &log[0], C.size_t(len(log)))); err != nil {
		return nil, C.GoString(&log[0]), err
	}
	return m, "", nil
}

func (api) moduleUnload(m cuModule) error {
	return check("cuModuleUnload", C.hsdb_cuModuleUnload(m))
}

func (api) moduleFunction(m cuModule, name string) (cuFunction, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.CUfunction
	err := check("cuModuleGetFunction", C.hsdb_cuModuleGetFunction(&f, m, cs))
	return f, err
}

func (api) funcSetMaxDynamicSmem(f cuFunction, bytes int) error {
	return check("cuFuncSetAttribute", C.hsdb_cuFuncSetAttribute(f, 8, C.int(bytes))) // MAX_DYNAMIC_SHARED_SIZE_BYTES
}

func (api) launch(f cuFunction, grid, block Dim3, smem int, s cuStream, args *[maxKernelArgs * 8]byte, n int) error {
	return check("cuLaunchKernel", C.hsdb_launch(f, C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y),
		C.uint(block.Z), C.uint(smem), s, unsafe.Pointer(&args[0]), C.int(n)))
}
