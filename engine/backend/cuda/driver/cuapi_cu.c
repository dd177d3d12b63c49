//go:build cuda && cu

// cuapi_cu.c: see cuapi_cu.h. Built only with -tags cuda,cu, where cu
// already links -lcuda; cuda.h comes from the CUDA toolkit (Debian's
// nvidia-cuda-dev: /usr/include).
#include <cuda.h>
#include "cuapi_cu.h"

int hsdb_cux_mem_host_alloc(void** p, size_t n) { return (int)cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE); }

int hsdb_cux_func_set_max_smem(void* f, int bytes) {
    return (int)cuFuncSetAttribute((CUfunction)f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

const char* hsdb_cux_error_name(int r) {
    const char* s = NULL;
    if (cuGetErrorName((CUresult)r, &s) != CUDA_SUCCESS || s == NULL) return "CUDA_ERROR_UNKNOWN_CODE";
    return s;
}

const char* hsdb_cux_error_string(int r) {
    const char* s = NULL;
    if (cuGetErrorString((CUresult)r, &s) != CUDA_SUCCESS || s == NULL) return "";
    return s;
}
