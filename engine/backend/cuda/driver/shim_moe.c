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

typedef CUresult (*wait_fn)(CUstream, CUevent, unsigned int);
static wait_fn p_wait;

struct hsdb_moe_streams* hsdb_moe_streams_new(void) {
    if (p_wait == NULL) {
        void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (h == NULL) return NULL;
        p_wait = (wait_fn)dlsym(h, "cuStreamWaitEvent");
        if (p_wait == NULL) return NULL;
    }
    struct hsdb_moe_streams* m = (struct hsdb_moe_streams*)calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    if (hsdb_cuEventCreate(&m->fork, 2) != 0) goto fail;  // CU_EVENT_DISABLE_TIMING
    for (int i = 0; i < HSDB_MOE_STREAMS; i++) {
        if (hsdb_cuStreamCreate(&m->s[i], 1) != 0 || hsdb_cuEventCreate(&m->join[i], 2) != 0 ||
            hsdb_cublasCreate(&m->h[i]) != 0 || hsdb_cublasSetStream(m->h[i], (cudaStream_t)m->s[i]) != 0)
            goto fail;
    }
    return m;
fail:
    for (int i = 0; i < HSDB_MOE_STREAMS; i++) {
        if (m->h[i]) hsdb_cublasDestroy(m->h[i]);
        if (m->join[i]) hsdb_cuEventDestroy(m->join[i]);
        if (m->s[i]) hsdb_cuStreamDestroy(m->s[i]);
    }
    if (m->fork) hsdb_cuEventDestroy(m->fork);
    free(m);
    return NULL;
}

cublasStatus_t hsdb_gemm_experts_multi(struct hsdb_moe_streams* m, CUstream main, int n, const int* rows,
                                       const unsigned long long* w, int N, int K, unsigned long long A,
                                       unsigned long long C, cudaDataType dt, int es) {
    const float one = 1.f, zero = 0.f;
    const cublasStatus_t internal = 14;  // CUBLAS_STATUS_INTERNAL_ERROR
    if (hsdb_cuEventRecord(m->fork, main) != 0) return internal;
    for (int i = 0; i < HSDB_MOE_STREAMS; i++)
        if (p_wait(m->s[i], m->fork, 0) != 0) return internal;
    long long load[HSDB_MOE_STREAMS] = {0};
    unsigned long long a = A, c = C;
    cublasStatus_t st = 0;
    for (int e = 0; e < n && st == 0; e++) {
        int r = rows[e];
        if (r <= 0) continue;
        int best = 0;
        for (int i = 1; i < HSDB_MOE_STREAMS; i++)
            if (load[i] < load[best]) best = i;
        load[best] += r;
        st = hsdb_cublasGemmEx(m->h[best], 1, 0, N, r, K, &one, (const void*)w[e], dt, K, (const void*)a, dt, K, &zero,
                               (void*)c, dt, N, 68, -1);
        a += (unsigned long long)r * (unsigned long long)K * (unsigned long long)es;
        c += (unsigned long long)r * (unsigned long long)N * (unsigned long long)es;
    }
    // Join even after a failure, so main never runs ahead of queued GEMMs.
    for (int i = 0; i < HSDB_MOE_STREAMS; i++) {
        if (hsdb_cuEventRecord(m->join[i], m->s[i]) != 0 || p_wait(main, m->join[i], 0) != 0) return internal;
    }
    return st;
}
