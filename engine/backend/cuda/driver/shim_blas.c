//go:build cuda

// shim_blas.c: cuBLAS entry points resolved with dlopen/dlsym; see
// shim_blas.h.
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shim_blas.h"

#define HSDB_PTR(name, sym, params, args) static cublasStatus_t (*p_##name) params;
HSDB_BLAS_FUNCS(HSDB_PTR)
static const char* (*p_status_string)(cublasStatus_t);

HSDB_BLASLT_FUNCS(HSDB_PTR)

#define HSDB_WRAP(name, sym, params, args) cublasStatus_t hsdb_##name params { return p_##name args; }
HSDB_BLAS_FUNCS(HSDB_WRAP)
HSDB_BLASLT_FUNCS(HSDB_WRAP)

// The layouts cublasLt.h gives them (scripts/ci-cuda-vet.sh checks the
// real header's sizes too).
_Static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "cublasLtMatmulAlgo_t");
_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "cublasLtMatmulHeuristicResult_t");

static const char* blas_lib;  // what hsdb_blas_open opened
static const char* blas_lt;

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
    blas_lib = strdup(lib);
    blas_lt = lt ? strdup(lt) : NULL;
    return NULL;
}

const char* hsdb_blaslt_open(void) {
    static char name[4096];
    const char* lt = blas_lt;
    if (lt == NULL) {  // libcublas.so.13 -> libcublasLt.so.13, in the same directory
        const char* base = strrchr(blas_lib, '/');
        base = base ? base + 1 : blas_lib;
        if (strncmp(base, "libcublas", 9) != 0 || strlen(blas_lib) + 3 >= sizeof name) return "cuBLASLt: no library name";
        size_t dir = (size_t)(base - blas_lib);
        memcpy(name, blas_lib, dir);
        snprintf(name + dir, sizeof name - dir, "libcublasLt%s", base + 9);
        lt = name;
    }
    void* h = dlopen(lt, RTLD_NOW | RTLD_LOCAL);
    if (!h) return dlerror();
    HSDB_BLASLT_FUNCS(HSDB_SYM)
    return NULL;
}

// cuBLASLt's enum values (cublasLt.h of CUDA 12.9 / 13): descriptor
// attributes and a preference attribute, data and compute types.
enum {
    LT_TRANSA = 3,
    LT_TRANSB = 4,
    LT_A_SCALE_POINTER = 17,
    LT_B_SCALE_POINTER = 18,
    LT_A_SCALE_MODE = 31,
    LT_B_SCALE_MODE = 32,
    LT_PREF_MAX_WORKSPACE_BYTES = 1,
    LT_R_8F_E4M3 = 28,
    LT_R_16BF = 14,
    LT_R_32F = 0,
    LT_COMPUTE_32F = 68,
};

cublasStatus_t hsdb_lt_fp8_block_gemm(cublasLtHandle_t h, int m, int n, int k, unsigned long long A,
                                      unsigned long long ascale, unsigned long long B, unsigned long long bscale,
                                      unsigned long long D, int amode, int bmode, cublasLtMatmulAlgo_t* algo,
                                      int* have, unsigned long long* need, unsigned long long ws,
                                      unsigned long long wsz, cudaStream_t s) {
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    const int ta = 1, tb = 0;
    const void* pa = (const void*)ascale;
    const void* pb = (const void*)bscale;
    const float alpha = 1, beta = 0;
    size_t wsize = (size_t)wsz;
    cublasStatus_t st = p_cublasLtMatmulDescCreate(&op, LT_COMPUTE_32F, LT_R_32F);
#define LT_TRY(call) \
    if (st == 0) st = (call)
    LT_TRY(p_cublasLtMatmulDescSetAttribute(op, LT_TRANSA, &ta, sizeof ta));
    LT_TRY(p_cublasLtMatmulDescSetAttribute(op, LT_TRANSB, &tb, sizeof tb));
    LT_TRY(p_cublasLtMatmulDescSetAttribute(op, LT_A_SCALE_MODE, &amode, sizeof amode));
    LT_TRY(p_cublasLtMatmulDescSetAttribute(op, LT_B_SCALE_MODE, &bmode, sizeof bmode));
    LT_TRY(p_cublasLtMatmulDescSetAttribute(op, LT_A_SCALE_POINTER, &pa, sizeof pa));
    LT_TRY(p_cublasLtMatmulDescSetAttribute(op, LT_B_SCALE_POINTER, &pb, sizeof pb));
    LT_TRY(p_cublasLtMatrixLayoutCreate(&la, LT_R_8F_E4M3, (uint64_t)k, (uint64_t)m, k));
    LT_TRY(p_cublasLtMatrixLayoutCreate(&lb, LT_R_8F_E4M3, (uint64_t)k, (uint64_t)n, k));
    LT_TRY(p_cublasLtMatrixLayoutCreate(&ld, LT_R_16BF, (uint64_t)m, (uint64_t)n, m));
    int queried = 0;
    if (st == 0 && !*have) {
        cublasLtMatmulHeuristicResult_t r;
        int got = 0;
        memset(&r, 0, sizeof r);
        LT_TRY(p_cublasLtMatmulPreferenceCreate(&pref));
        LT_TRY(p_cublasLtMatmulPreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE_BYTES, &wsize, sizeof wsize));
        LT_TRY(p_cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 1, &r, &got));
        if (st == 0 && got == 0) st = 15;  // CUBLAS_STATUS_NOT_SUPPORTED
        if (st == 0) {
            *algo = r.algo;
            *need = r.workspaceSize;
            *have = 1;
            queried = 1;
        }
    }
    if (!queried) LT_TRY(p_cublasLtMatmul(h, op, &alpha, (const void*)A, la, (const void*)B, lb, &beta, (const void*)D, ld,
                            (void*)D, ld, algo, (void*)ws, wsize, s));
#undef LT_TRY
    if (pref) p_cublasLtMatmulPreferenceDestroy(pref);
    if (ld) p_cublasLtMatrixLayoutDestroy(ld);
    if (lb) p_cublasLtMatrixLayoutDestroy(lb);
    if (la) p_cublasLtMatrixLayoutDestroy(la);
    if (op) p_cublasLtMatmulDescDestroy(op);
    return st;
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
