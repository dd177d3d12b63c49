//go:build cuda

// shim_driver.c: function pointers for the CUDA driver API resolved with
// dlopen/dlsym, and one C wrapper per function for cgo (which cannot call
// through a function pointer). See shim_driver.h.
#include <dlfcn.h>
#include <stddef.h>
#include "shim_driver.h"

#define HSDB_PTR(name, sym, params, args) static CUresult (*p_##name) params;
HSDB_CU_FUNCS(HSDB_PTR)

#define HSDB_WRAP(name, sym, params, args) CUresult hsdb_##name params { return p_##name args; }
HSDB_CU_FUNCS(HSDB_WRAP)

// hsdb_cu_open dlopens lib and resolves every symbol. It returns NULL on
// success, else a description of what failed (dlerror's text or the missing
// symbol's name).
const char* hsdb_cu_open(const char* lib) {
    void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return dlerror();
#define HSDB_SYM(name, sym, params, args)            \
    p_##name = (CUresult(*) params)dlsym(h, #sym); \
    if (!p_##name) return #sym;
    HSDB_CU_FUNCS(HSDB_SYM)
    return NULL;
}

// hsdb_launch builds the kernelParams array from n 8-byte slots of buf
// (each holding one argument, little-endian, at the slot's start) and
// launches f on stream s.
CUresult hsdb_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                     unsigned smem, CUstream s, void* buf, int n) {
    void* params[32];
    if (n > 32) return 1;  // CUDA_ERROR_INVALID_VALUE
    for (int i = 0; i < n; i++) params[i] = (char*)buf + 8 * i;
    return p_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params, NULL);
}

// hsdb_load_module loads NUL-terminated PTX, collecting the JIT's error log
// into log.
CUresult hsdb_load_module(CUmodule* m, const char* ptx, char* log, size_t logsize) {
    CUjit_option opts[2] = {5, 6};  // CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
    void* vals[2] = {log, (void*)logsize};
    return p_cuModuleLoadDataEx(m, ptx, 2, opts, vals);
}

const char* hsdb_cu_error_name(CUresult r) {
    const char* s = NULL;
    if (p_cuGetErrorName == NULL || p_cuGetErrorName(r, &s) != 0 || s == NULL) return "CUDA_ERROR_UNKNOWN_CODE";
    return s;
}

const char* hsdb_cu_error_string(CUresult r) {
    const char* s = NULL;
    if (p_cuGetErrorString == NULL || p_cuGetErrorString(r, &s) != 0 || s == NULL) return "";
    return s;
}
