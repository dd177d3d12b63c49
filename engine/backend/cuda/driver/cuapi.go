//go:build cuda

package driver

import "unsafe"

// cuAPI is the seam between this package and the CUDA driver API: every
// driver call the package makes goes through it (the C shims of cuBLAS,
// NCCL and the MoE side streams excepted: they are C code and call the
// driver through shim_driver.c's pointers). Two implementations, chosen
// by build tag:
//
//   - cuapi_dlopen.go (-tags cuda): libcuda.so.1 opened with dlopen
//     through shim_driver.c. Needs no CUDA header or library to build, and
//     a binary built so starts on machines without the driver or a GPU
//     (Open returns ErrNoDriver or ErrNoDevice): the in-process `--device
//     cuda` of a -tags cuda hsdb.
//   - cuapi_cu.go (-tags cuda,cu): gorgonia.org/cu, the Go binding the
//     user chose. cu links -lcuda and its package init calls cuInit and
//     exits the process when there is no GPU (gorgonia/cu#45), so it is
//     built only into the CUDA worker (cmd/hsdb-cuda-worker), a process
//     that exists only where a GPU is wanted; the front end never links it
//     (cmd/hsdb refuses the cu tag).
//
// The handle types cuDevice, cuContext, cuStream, cuEvent, cuModule and
// cuFunction are each implementation's own (C handles, or cu's types).
// Every method runs on the GPU's device thread, with the device's primary
// context current, and returns nil or an *Error naming the driver call.
// The two implementations are held to this one method set by `var _ cuAPI
// = api{}` in each file, and CI compiles both (scripts/ci-cuda-vet.sh).
type cuAPI interface {
	// init loads the driver and calls cuInit(0) once per process:
	// ErrNoDriver or ErrNoDevice (wrapped) when there is no usable GPU.
	init() error
	deviceCount() (int, error)
	driverVersion() (int, error)
	device(ordinal int) (cuDevice, error)
	deviceName(d cuDevice) (string, error)
	deviceTotalMem(d cuDevice) (int64, error)
	// deviceAttribute reads a CUdevice_attribute (cuda.h's enum value).
	deviceAttribute(d cuDevice, attr int) (int, error)
	primaryCtxRetain(d cuDevice) (cuContext, error)
	primaryCtxRelease(d cuDevice) error
	ctxSetCurrent(c cuContext) error
	memGetInfo() (free, total int64, err error)
	memAlloc(n int64) (Ptr, error)
	memFree(p Ptr) error
	// memHostAlloc returns n bytes of pinned (page-locked, portable) host
	// memory; memFreeHost releases it.
	memHostAlloc(n int64) (unsafe.Pointer, error)
	memFreeHost(p unsafe.Pointer) error
	copyHtoDAsync(dst Ptr, src unsafe.Pointer, n int64, s cuStream) error
	copyDtoHAsync(dst unsafe.Pointer, src Ptr, n int64, s cuStream) error
	copyDtoDAsync(dst, src Ptr, n int64, s cuStream) error
	memsetD8Async(dst Ptr, v byte, n int64, s cuStream) error
	// streamCreate makes a non-blocking stream (CU_STREAM_NON_BLOCKING).
	streamCreate() (cuStream, error)
	streamDestroy(s cuStream) error
	streamSynchronize(s cuStream) error
	// eventCreate makes an event, with timing or without
	// (CU_EVENT_DISABLE_TIMING).
	eventCreate(timing bool) (cuEvent, error)
	eventRecord(e cuEvent, s cuStream) error
	eventSynchronize(e cuEvent) error
	// eventElapsed is the time from a to b in milliseconds.
	eventElapsed(a, b cuEvent) (float64, error)
	eventDestroy(e cuEvent) error
	// moduleLoadPTX JIT-compiles NUL-free PTX text for the current
	// context; on failure log holds the JIT's error log.
	moduleLoadPTX(ptx string) (m cuModule, log string, err error)
	moduleUnload(m cuModule) error
	moduleFunction(m cuModule, name string) (cuFunction, error)
	// funcSetMaxDynamicSmem opts f in to bytes of dynamic shared memory
	// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
	funcSetMaxDynamicSmem(f cuFunction, bytes int) error
	// launch runs f on s with the n kernel arguments held one per 8-byte
	// slot of args (little-endian, at the slot's start).
	launch(f cuFunction, grid, block Dim3, smem int, s cuStream, args *[maxKernelArgs * 8]byte, n int) error
}

// maxKernelArgs is the most kernel arguments Launch passes.
const maxKernelArgs = 32

// drv is the driver API of this build (cuapi_dlopen.go or cuapi_cu.go).
var drv cuAPI = api{}
