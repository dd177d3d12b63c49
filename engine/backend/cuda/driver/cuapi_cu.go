//go:build cuda && cu

package driver

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcuda
#include <stdlib.h>
#include "shim_driver.h"
#include "cuapi_cu.h"
*/
import "C"

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// api is the driver API over gorgonia.org/cu (see cuAPI). Where cu v0.9.6
// has no call (pinned host allocation, setting a function attribute, the
// driver's own error names) cuapi_cu.c calls the libcuda that cu links.
type api struct{}

var _ cuAPI = api{}

// The handles are cu's.
type (
	cuDevice   = cu.Device
	cuContext  = cu.CUContext
	cuStream   = cu.Stream
	cuEvent    = cu.Event
	cuModule   = cu.Module
	cuFunction = cu.Function
)

// rawStream is s as the C shims of cuBLAS, NCCL and the MoE streams take
// it (cu.Stream.C is cu's exported escape hatch to the CUstream).
func rawStream(s cuStream) C.CUstream { return C.CUstream(unsafe.Pointer(s.C())) }

// DriverAPI names the implementation of the driver API this binary uses.
const DriverAPI = "gorgonia.org/cu"

// cu.Function holds its CUfunction as its only field and has no accessor
// for it; cuFuncSetAttribute needs it (rawFunction). These constants fail
// to compile if a cu version changes the layout.
const (
	_ = unsafe.Sizeof(cu.Function{}) - unsafe.Sizeof(unsafe.Pointer(nil))
	_ = unsafe.Sizeof(unsafe.Pointer(nil)) - unsafe.Sizeof(cu.Function{})
)

func rawFunction(f *cu.Function) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(f)) }

// cuCheck turns cu's error (its CUresult as an unexported integer type)
// into an *Error with the driver's name and text for the code.
func cuCheck(op string, err error) error {
	if err == nil {
		return nil
	}
	v := reflect.ValueOf(err)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return codeError(op, int(v.Int()))
	}
	return &Error{Op: op, Code: -1, Name: "CUDA_ERROR_UNKNOWN_CODE", Msg: err.Error()}
}

func codeError(op string, r int) error {
	if r == 0 {
		return nil
	}
	return &Error{Op: op, Code: r, Name: C.GoString(C.hsdb_cux_error_name(C.int(r))), Msg: C.GoString(C.hsdb_cux_error_string(C.int(r)))}
}

var (
	driverOnce sync.Once
	driverErr  error
)

// init: cu's package init has called cuInit(0) already (and ended the
// process had it failed). The C shims that are not Go (the MoE side
// streams of shim_moe.c) call the driver through shim_driver.c's
// pointers, resolved here against the libcuda.so.1 the binary is linked
// with (dlopen returns the loaded library).
func (api) init() error {
	driverOnce.Do(func() {
		cs := C.CString("libcuda.so.1")
		defer C.free(unsafe.Pointer(cs))
		if msg := C.hsdb_cu_open(cs); msg != nil {
			driverErr = fmt.Errorf("%w: resolving libcuda.so.1 for the C shims: %s", ErrNoDriver, C.GoString(msg))
		}
	})
	return driverErr
}

func (api) deviceCount() (int, error) {
	n, err := cu.NumDevices()
	return n, cuCheck("cuDeviceGetCount", err)
}

func (api) driverVersion() (int, error) {
	v := cu.Version()
	if v < 0 {
		return 0, &Error{Op: "cuDriverGetVersion", Code: -1, Name: "CUDA_ERROR_UNKNOWN_CODE", Msg: "cu.Version failed"}
	}
	return v, nil
}

func (api) device(ordinal int) (cuDevice, error) {
	d, err := cu.GetDevice(ordinal)
	return d, cuCheck("cuDeviceGet", err)
}

func (api) deviceName(d cuDevice) (string, error) {
	s, err := d.Name()
	return s, cuCheck("cuDeviceGetName", err)
}

func (api) deviceTotalMem(d cuDevice) (int64, error) {
	n, err := d.TotalMem()
	return n, cuCheck("cuDeviceTotalMem", err)
}

func (api) deviceAttribute(d cuDevice, attr int) (int, error) {
	v, err := d.Attribute(cu.DeviceAttribute(attr))
	return v, cuCheck("cuDeviceGetAttribute", err)
}

func (api) primaryCtxRetain(d cuDevice) (cuContext, error) {
	c, err := d.RetainPrimaryCtx()
	return c, cuCheck("cuDevicePrimaryCtxRetain", err)
}

func (api) primaryCtxRelease(d cuDevice) error {
	return cuCheck("cuDevicePrimaryCtxRelease", d.ReleasePrimaryCtx())
}

func (api) ctxSetCurrent(c cuContext) error {
	return cuCheck("cuCtxSetCurrent", cu.SetCurrentContext(c))
}

func (api) memGetInfo() (free, total int64, err error) {
	free, total, err = cu.MemInfo()
	return free, total, cuCheck("cuMemGetInfo", err)
}

func (api) memAlloc(n int64) (Ptr, error) {
	p, err := cu.MemAlloc(n)
	return Ptr(p), cuCheck("cuMemAlloc", err)
}

func (api) memFree(p Ptr) error {
	return cuCheck("cuMemFree", cu.MemFree(cu.DevicePtr(p)))
}

func (api) memHostAlloc(n int64) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := codeError("cuMemHostAlloc", int(C.hsdb_cux_mem_host_alloc(&p, C.size_t(n))))
	return p, err
}

func (api) memFreeHost(p unsafe.Pointer) error {
	return cuCheck("cuMemFreeHost", cu.MemFreeHost(p))
}

func (api) copyHtoDAsync(dst Ptr, src unsafe.Pointer, n int64, s cuStream) error {
	return cuCheck("cuMemcpyHtoDAsync", cu.MemcpyHtoDAsync(cu.DevicePtr(dst), src, n, s))
}

func (api) copyDtoHAsync(dst unsafe.Pointer, src Ptr, n int64, s cuStream) error {
	return cuCheck("cuMemcpyDtoHAsync", cu.MemcpyDtoHAsync(dst, cu.DevicePtr(src), n, s))
}

func (api) copyDtoDAsync(dst, src Ptr, n int64, s cuStream) error {
	return cuCheck("cuMemcpyDtoDAsync", cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), n, s))
}

func (api) memsetD8Async(dst Ptr, v byte, n int64, s cuStream) error {
	return cuCheck("cuMemsetD8Async", cu.MemsetD8Async(cu.DevicePtr(dst), v, n, s))
}

func (api) streamCreate() (cuStream, error) {
	s, err := cu.MakeStream(cu.NonBlocking)
	return s, cuCheck("cuStreamCreate", err)
}

func (api) streamDestroy(s cuStream) error {
	return cuCheck("cuStreamDestroy", s.Destroy())
}

func (api) streamSynchronize(s cuStream) error {
	return cuCheck("cuStreamSynchronize", s.Synchronize())
}

func (api) eventCreate(timing bool) (cuEvent, error) {
	flags := cu.DisableTiming
	if timing {
		flags = 0
	}
	e, err := cu.MakeEvent(flags)
	return e, cuCheck("cuEventCreate", err)
}

func (api) eventRecord(e cuEvent, s cuStream) error {
	return cuCheck("cuEventRecord", e.Record(s))
}

func (api) eventSynchronize(e cuEvent) error {
	return cuCheck("cuEventSynchronize", e.Synchronize())
}

func (api) eventElapsed(a, b cuEvent) (float64, error) {
	ms, err := a.Elapsed(b)
	return ms, cuCheck("cuEventElapsedTime", err)
}

func (api) eventDestroy(e cuEvent) error {
	return cuCheck("cuEventDestroy", cu.DestroyEvent(&e))
}

func (api) moduleLoadPTX(ptx string) (cuModule, string, error) {
	log := &cu.JITErrorLogBuffer{Buffer: make([]byte, 8192)}
	m, err := cu.LoadDataEx(ptx, log)
	if err != nil {
		return m, C.GoString((*C.char)(unsafe.Pointer(&log.Buffer[0]))), cuCheck("cuModuleLoadDataEx", err)
	}
	return m, "", nil
}

func (api) moduleUnload(m cuModule) error {
	return cuCheck("cuModuleUnload", m.Unload())
}

func (api) moduleFunction(m cuModule, name string) (cuFunction, error) {
	f, err := m.Function(name)
	return f, cuCheck("cuModuleGetFunction", err)
}

func (api) funcSetMaxDynamicSmem(f cuFunction, bytes int) error {
	return codeError("cuFuncSetAttribute", int(C.hsdb_cux_func_set_max_smem(rawFunction(&f), C.int(bytes))))
}

func (api) launch(f cuFunction, grid, block Dim3, smem int, s cuStream, args *[maxKernelArgs * 8]byte, n int) error {
	var params [maxKernelArgs]unsafe.Pointer
	for i := range n {
		params[i] = unsafe.Pointer(&args[8*i])
	}
	return cuCheck("cuLaunchKernel", f.Launch(int(grid.X), int(grid.Y), int(grid.Z), int(block.X), int(block.Y), int(block.Z), smem, s, params[:n]))
}
