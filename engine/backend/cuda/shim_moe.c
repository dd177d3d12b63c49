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
