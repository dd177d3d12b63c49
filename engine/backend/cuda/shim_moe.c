//go:build cuda

// shim_moe.c: see shim_moe.h. One cgo call launches every expert's GEMM,
// so a layer of 256 experts costs 256 cuBLAS launches and no Go↔C
// transitions between them.
#include "shim_moe.h"

cublasStatus_t hsdb_gemm_experts(cublasHandle_t h, int n, const int* rows, const unsigned long long* w, int N, int K,
                                 unsigned long long A, unsigned long long C, cudaDataType dt, int es) {
    const float one = 1.f, zero = 0.f;
    unsigned long long a = A, c = C;
    for (int e = 0; e < n; e++) {
        int m = rows[e];
        if (m <= 0) continue;
        // Row-major C = A·Wᵀ is column-major Cᵀ = W·Aᵀ: op(W) = T.
        cublasStatus_t s = hsdb_cublasGemmEx(h, 1, 0, N, m, K, &one, (const void*)w[e], dt, K, (const void*)a, dt, K,
                                             &zero, (void*)c, dt, N, 68, -1);
        if (s != 0) return s;
        a += (unsigned long long)m * (unsigned long long)K * (unsigned long long)es;
        c += (unsigned long long)m * (unsigned long long)N * (unsigned long long)es;
    }
    return 0;
}

#include <dlfcn.h>
#include <stdlib.h>

typedef cublasStatus_t (*grouped_fn)(cublasHandle_t, const cublasOperation_t*, const cublasOperation_t*, const int*,
                                     const int*, const int*, const void*, const void* const*, cudaDataType,
                                     const int*, const void* const*, cudaDataType, const int*, const void*,
                                     void* const*, cudaDataType, const int*, int, const int*, cublasComputeType_t);
static grouped_fn p_grouped;

int hsdb_moe_open(const char* lib) {
    void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) return 0;
    p_grouped = (grouped_fn)dlsym(h, "cublasGemmGroupedBatchedEx");
    return p_grouped != NULL;
}

cublasStatus_t hsdb_gemm_experts_grouped(cublasHandle_t h, int n, const int* rows, int N, int K, unsigned long long a,
                                         unsigned long long w, unsigned long long c, cudaDataType dt) {
    if (p_grouped == NULL) return 7;  // CUBLAS_STATUS_INVALID_VALUE
    if (n <= 0) return 0;
    int* ints = (int*)malloc(sizeof(int) * 9 * (size_t)n);
    float* ab = (float*)malloc(sizeof(float) * 2 * (size_t)n);
    if (ints == NULL || ab == NULL) {
        free(ints);
        free(ab);
        return 3;  // CUBLAS_STATUS_ALLOC_FAILED
    }
    int *ta = ints, *tb = ints + n, *m = ints + 2 * n, *nn = ints + 3 * n, *k = ints + 4 * n, *lda = ints + 5 * n,
        *ldb = ints + 6 * n, *ldc = ints + 7 * n, *gs = ints + 8 * n;
    for (int i = 0; i < n; i++) {
        // Column-major Cᵀ [N, rows] = W [N, K] (stored [K, N]: op T) · Aᵀ.
        ta[i] = 1, tb[i] = 0, m[i] = N, nn[i] = rows[i], k[i] = K;
        lda[i] = K, ldb[i] = K, ldc[i] = N, gs[i] = 1;
        ab[i] = 1.f, ab[n + i] = 0.f;
    }
    cublasStatus_t s = p_grouped(h, ta, tb, m, nn, k, ab, (const void* const*)w, dt, lda, (const void* const*)a, dt,
                                 ldb, ab + n, (void* const*)c, dt, ldc, n, gs, 68);
    free(ints);
    free(ab);
    return s;
}
