// cuapi_cu.h: the driver calls the gorgonia.org/cu build (cuapi_cu.go) needs
// and cu v0.9.6 lacks, over the libcuda that cu links (cuapi_cu.c). Plain C
// types only, so that this header and shim_driver.h can meet in one cgo
// preamble.
#pragma once
#include <stddef.h>

// hsdb_cux_mem_host_alloc is cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE):
// cu has MemFreeHost but no allocation (its generator maps cuMemHostAlloc
// to "use C.malloc", which is not page-locked).
int hsdb_cux_mem_host_alloc(void** p, size_t n);

// hsdb_cux_func_set_max_smem is cuFuncSetAttribute(f,
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes): cu can read a
// function's attributes but not set them.
int hsdb_cux_func_set_max_smem(void* f, int bytes);

// hsdb_cux_error_name and hsdb_cux_error_string are cuGetErrorName and
// cuGetErrorString of a CUresult ("CUDA_ERROR_UNKNOWN_CODE" and "" when
// the driver does not know it): cu's errors carry only its own short names.
const char* hsdb_cux_error_name(int r);
const char* hsdb_cux_error_string(int r);
