//go:build cuda

// shim_blas.c: cuBLAS entry points resolved with dlopen/dlsym; see
// shim_blas.h.
#include <dlfcn.h>
#include <stddef.h>
#include "shim_blas.h"

#define HSDB_PTR(name, sym, params, args) static cublasStatus_t (*p_##name) params;
HSDB_BLAS_FUNCS(HSDB_PTR)
static const char* (*p_status_string)(cublasStatus_t);

#define HSDB_WRAP(name, sym, params, args) cublasStatus_t hsdb_##name params { return p_##name args; }
HSDB_BLAS_FUNCS(HSDB_WRAP)

// hsdb_blas_open opens cuBLAS from lib. When lt is not NULL, cuBLASLt (which
// libcublas needs) is opened first from that path with RTLD_GLOBAL, so a
// libcublas found outside the loader path still resolves it. Returns NULL on
// success, else what failed.
const char* hsdb_blas_open(const char* lib, const char* lt) {
    if (lt != NULL && dlopen(lt, RTLD_NOW | RTLD_GLOBAL) == NULL) return dlerror();
    void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return dlerror();
#define HSDB_SYM(name, sym, params, args)                   \
    p_##name = (cublasStatus_t(*) params)dlsym(h, #sym); \
    if (!p_##name) return #sym;
    HSDB_BLAS_FUNCS(HSDB_SYM)
    p_status_string = (const char* (*)(cublasStatus_t))dlsym(h, "cublasGetStatusString");
    return NULL;
}

const char* hsdb_blas_status_string(cublasStatus_t s) {
    if (p_status_string == NULL) return "";
    const char* r = p_status_string(s);
    return r ? r : "";
}

cublasStatus_t hsdb_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                         float alpha, unsigned long long A, cudaDataType at, int lda, unsigned long long B,
                         cudaDataType bt, int ldb, float beta, unsigned long long C, cudaDataType ct, int ldc,
                         long long sa, long long sb, long long sc, int batch) {
    const cublasComputeType_t compute = 68;  // CUBLAS_COMPUTE_32F
    const cublasGemmAlgo_t algo = -1;        // CUBLAS_GEMM_DEFAULT
    if (batch == 1)
        return p_cublasGemmEx(h, ta, tb, m, n, k, &alpha, (const void*)A, at, lda, (const void*)B, bt, ldb, &beta,
                              (void*)C, ct, ldc, compute, algo);
    return p_cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &alpha, (const void*)A, at, lda, sa, (const void*)B, bt,
                                        ldb, sb, &beta, (void*)C, ct, ldc, sc, batch, compute, algo);
}
