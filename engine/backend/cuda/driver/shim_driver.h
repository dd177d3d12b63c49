// shim_driver.h: the CUDA driver API functions hsdb calls, opened with
// dlopen("libcuda.so.1") at run time so that no CUDA header or library is
// needed to build, and a binary built with -tags cuda starts on machines
// without the NVIDIA driver.
//
// HSDB_CU_FUNCS lists (Go-side name, exported symbol, parameters, arguments).
// The symbols are the versioned ones cuda.h maps the plain names to (cuda.h
// 11.8+: cuMemAlloc -> cuMemAlloc_v2, ...). scripts/ci-cuda-vet.sh compiles
// this list against the real cuda.h (HSDB_REAL_HEADERS) so a wrong signature
// fails CI instead of corrupting a call.
#pragma once
#include <stddef.h>

#ifndef HSDB_REAL_HEADERS
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;
typedef int CUjit_option;
#endif

#define HSDB_CU_FUNCS(X)                                                                              \
    X(cuInit, cuInit, (unsigned int flags), (flags))                                                  \
    X(cuDriverGetVersion, cuDriverGetVersion, (int* v), (v))                                          \
    X(cuDeviceGetCount, cuDeviceGetCount, (int* n), (n))                                              \
    X(cuDeviceGet, cuDeviceGet, (CUdevice * d, int ordinal), (d, ordinal))                            \
    X(cuDeviceGetName, cuDeviceGetName, (char* name, int len, CUdevice d), (name, len, d))            \
    X(cuDeviceTotalMem, cuDeviceTotalMem_v2, (size_t * bytes, CUdevice d), (bytes, d))                \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, (int* v, CUdevice_attribute a, CUdevice d), (v, a, d)) \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, (CUcontext * c, CUdevice d), (c, d))        \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice d), (d))                     \
    X(cuCtxSetCurrent, cuCtxSetCurrent, (CUcontext c), (c))                                           \
    X(cuCtxSynchronize, cuCtxSynchronize, (void), ())                                                 \
    X(cuMemGetInfo, cuMemGetInfo_v2, (size_t * free, size_t * total), (free, total))                  \
    X(cuMemAlloc, cuMemAlloc_v2, (CUdeviceptr * p, size_t n), (p, n))                                 \
    X(cuMemFree, cuMemFree_v2, (CUdeviceptr p), (p))                                                  \
    X(cuMemHostAlloc, cuMemHostAlloc, (void** p, size_t n, unsigned int flags), (p, n, flags))        \
    X(cuMemFreeHost, cuMemFreeHost, (void* p), (p))                                                   \
    X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void* src, size_t n, CUstream s), (dst, src, n, s)) \
    X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, (void* dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s)) \
    X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s)) \
    X(cuMemsetD8Async, cuMemsetD8Async, (CUdeviceptr dst, unsigned char v, size_t n, CUstream s), (dst, v, n, s)) \
    X(cuStreamCreate, cuStreamCreate, (CUstream * s, unsigned int flags), (s, flags))                 \
    X(cuStreamDestroy, cuStreamDestroy_v2, (CUstream s), (s))                                         \
    X(cuStreamSynchronize, cuStreamSynchronize, (CUstream s), (s))                                    \
    X(cuEventCreate, cuEventCreate, (CUevent * e, unsigned int flags), (e, flags))                    \
    X(cuEventRecord, cuEventRecord, (CUevent e, CUstream s), (e, s))                                  \
    X(cuEventSynchronize, cuEventSynchronize, (CUevent e), (e))                                       \
    X(cuEventElapsedTime, cuEventElapsedTime, (float* ms, CUevent a, CUevent b), (ms, a, b))          \
    X(cuEventDestroy, cuEventDestroy_v2, (CUevent e), (e))                                            \
    X(cuModuleLoadDataEx, cuModuleLoadDataEx, (CUmodule * m, const void* image, unsigned int n, CUjit_option* opts, void** vals), (m, image, n, opts, vals)) \
    X(cuModuleUnload, cuModuleUnload, (CUmodule m), (m))                                              \
    X(cuModuleGetFunction, cuModuleGetFunction, (CUfunction * f, CUmodule m, const char* name), (f, m, name)) \
    X(cuFuncSetAttribute, cuFuncSetAttribute, (CUfunction f, CUfunction_attribute a, int v), (f, a, v)) \
    X(cuLaunchKernel, cuLaunchKernel, (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void** params, void** extra), (f, gx, gy, gz, bx, by, bz, smem, s, params, extra)) \
    X(cuGetErrorName, cuGetErrorName, (CUresult r, const char** s), (r, s))                           \
    X(cuGetErrorString, cuGetErrorString, (CUresult r, const char** s), (r, s))

#ifndef HSDB_REAL_HEADERS
// Wrappers defined in shim_driver.c: hsdb_cuMemAlloc(...) calls the
// resolved cuMemAlloc_v2, and so on.
#define HSDB_PROTO(name, sym, params, args) CUresult hsdb_##name params;
HSDB_CU_FUNCS(HSDB_PROTO)
#undef HSDB_PROTO

const char* hsdb_cu_open(const char* lib);
CUresult hsdb_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                     unsigned smem, CUstream s, void* buf, int n);
CUresult hsdb_load_module(CUmodule* m, const char* ptx, char* log, size_t logsize);
const char* hsdb_cu_error_name(CUresult r);
const char* hsdb_cu_error_string(CUresult r);
#endif
