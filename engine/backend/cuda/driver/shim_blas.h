// shim_blas.h: the cuBLAS functions hsdb calls, opened with dlopen at run
// time (see blas.go for the library search). HSDB_BLAS_FUNCS lists
// (Go-side name, exported symbol, parameters, arguments), as in
// shim_driver.h; scripts/ci-cuda-vet.sh compiles it against the real
// cublas_api.h.
#pragma once

#ifndef HSDB_REAL_HEADERS
typedef int cublasStatus_t;
typedef struct cublasContext* cublasHandle_t;
typedef int cublasOperation_t;   // CUBLAS_OP_N = 0, CUBLAS_OP_T = 1
typedef int cudaDataType;        // CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14
typedef int cublasComputeType_t; // CUBLAS_COMPUTE_32F = 68
typedef int cublasGemmAlgo_t;    // CUBLAS_GEMM_DEFAULT = -1
typedef struct CUstream_st* cudaStream_t;
#endif

#define HSDB_BLAS_FUNCS(X)                                                                                 \
    X(cublasCreate, cublasCreate_v2, (cublasHandle_t * h), (h))                                            \
    X(cublasDestroy, cublasDestroy_v2, (cublasHandle_t h), (h))                                            \
    X(cublasSetStream, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))                     \
    X(cublasGetVersion, cublasGetVersion_v2, (cublasHandle_t h, int* v), (h, v))                           \
    X(cublasGemmEx, cublasGemmEx,                                                                          \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, \
       const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt, int ldb, const void* beta,  \
       void* C, cudaDataType ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo),             \
      (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo))                \
    X(cublasGemmStridedBatchedEx, cublasGemmStridedBatchedEx,                                              \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, \
       const void* A, cudaDataType at, int lda, long long sa, const void* B, cudaDataType bt, int ldb,     \
       long long sb, const void* beta, void* C, cudaDataType ct, int ldc, long long sc, int batch,         \
       cublasComputeType_t compute, cublasGemmAlgo_t algo),                                                \
      (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute, algo))

#ifndef HSDB_REAL_HEADERS
#define HSDB_PROTO(name, sym, params, args) cublasStatus_t hsdb_##name params;
HSDB_BLAS_FUNCS(HSDB_PROTO)
#undef HSDB_PROTO
const char* hsdb_blas_open(const char* lib, const char* lt);
const char* hsdb_blas_status_string(cublasStatus_t s);
// Device addresses travel from Go as integers (a Go unsafe.Pointer may not
// hold one) and alpha/beta by value; these cast and call cublasGemmEx /
// cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT.
cublasStatus_t hsdb_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                         float alpha, unsigned long long A, cudaDataType at, int lda, unsigned long long B,
                         cudaDataType bt, int ldb, float beta, unsigned long long C, cudaDataType ct, int ldc,
                         long long sa, long long sb, long long sc, int batch);
#endif
