//go:build cuda

package driver

import "errors"

// Sentinel errors; callers test them with errors.Is.
var (
	// ErrNoDriver: libcuda.so.1 (the NVIDIA driver's user-space library)
	// could not be opened, or lacks a symbol hsdb needs.
	ErrNoDriver = errors.New("cuda: no NVIDIA driver")
	// ErrNoDevice: the driver is there but cuInit or cuDeviceGetCount found
	// no GPU (none installed, CUDA_VISIBLE_DEVICES empty, or the toolkit's
	// stub libcuda in place of the driver's).
	ErrNoDevice = errors.New("cuda: no CUDA device")
	// ErrOutOfMemory: a device allocation did not fit; the error is an
	// *OOMError with the numbers.
	ErrOutOfMemory = errors.New("cuda: out of device memory")
	// ErrClosed: the GPU was closed.
	ErrClosed = errors.New("cuda: device closed")
	// ErrNoCUBLAS: no libcublas could be opened (HSDB_CUBLAS, then
	// libcublas.so.13, .12, .11 on the loader path and in /usr/local/cuda/lib64).
	ErrNoCUBLAS = errors.New("cuda: cuBLAS not found")
	// ErrNoNCCL: libnccl.so.2 could not be opened (HSDB_NCCL, then the loader
	// path, /usr/local/cuda/lib64, /usr/lib/x86_64-linux-gnu).
	ErrNoNCCL = errors.New("cuda: NCCL not found")
	// ErrBadArgument: an op's shapes, dtypes or indices are inconsistent;
	// the message names the op and the offending value.
	ErrBadArgument = errors.New("cuda: bad argument")
)
