// shim_moe.h: the routed experts' GEMMs of one MoE layer in one cgo call
// (shim_moe.c), over the cuBLAS entry points of shim_blas.h.
#pragma once
#include "shim_blas.h"

// hsdb_gemm_experts runs, for each expert e < n with rows[e] > 0, the
// row-major C_e [rows[e], N] = A_e [rows[e], K] · W_eᵀ (W_e = w[e], [N, K],
// nn.Linear's layout) where A_e and C_e are consecutive row blocks of A
// and C (expert 0's rows first). dt is the cudaDataType of A, W and C, es
// its size in bytes; CUBLAS_COMPUTE_32F. Returns the first failing status.
cublasStatus_t hsdb_gemm_experts(cublasHandle_t h, int n, const int* rows, const unsigned long long* w, int N, int K,
                                 unsigned long long A, unsigned long long C, cudaDataType dt, int es);

// hsdb_moe_open resolves cublasGemmGroupedBatchedEx (cuBLAS 12.5 and later)
// from lib, the cuBLAS that shim_blas.c opened (dlopen returns its handle
// again). Returns 1 when the entry point exists, else 0.
int hsdb_moe_open(const char* lib);

// hsdb_gemm_experts_grouped is hsdb_gemm_experts as one
// cublasGemmGroupedBatchedEx call: n groups of one problem each (experts
// with rows[e] > 0 only), the device arrays a, w, c holding each problem's
// A_e, W_e and C_e addresses (n entries each).
cublasStatus_t hsdb_gemm_experts_grouped(cublasHandle_t h, int n, const int* rows, int N, int K, unsigned long long a,
                                         unsigned long long w, unsigned long long c, cudaDataType dt);

#include "shim_driver.h"

// hsdb_moe_streams: HSDB_MOE_STREAMS extra non-blocking streams, each with
// its own cuBLAS handle and a join event, and the fork event, so that the
// experts' small GEMMs run side by side instead of one after another.
#define HSDB_MOE_STREAMS 4
struct hsdb_moe_streams {
    CUstream s[HSDB_MOE_STREAMS];
    cublasHandle_t h[HSDB_MOE_STREAMS];
    CUevent fork;
    CUevent join[HSDB_MOE_STREAMS];
};

// hsdb_moe_streams_new creates the streams, handles and events in the
// current context (the GPU's thread); NULL when one cannot be made or the
// driver lacks cuStreamWaitEvent.
struct hsdb_moe_streams* hsdb_moe_streams_new(void);

// hsdb_gemm_experts_multi is hsdb_gemm_experts with the experts spread over
// m's streams (each expert to the stream with the fewest rows so far),
// forked from and joined back into main: main's later work waits for all.
cublasStatus_t hsdb_gemm_experts_multi(struct hsdb_moe_streams* m, CUstream main, int n, const int* rows,
                                       const unsigned long long* w, int N, int K, unsigned long long A,
                                       unsigned long long C, cudaDataType dt, int es);
