// shim_blas.h: the cuBLAS functions hsdb calls, opened with dlopen at run
// time (see blas.go for the library search). HSDB_BLAS_FUNCS lists
// (Go-side name, exported symbol, parameters, arguments), as in
// shim_driver.h; scripts/ci-cuda-vet.sh compiles it against the real
// cublas_api.h.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifndef HSDB_REAL_HEADERS
typedef int cublasStatus_t;
typedef struct cublasContext* cublasHandle_t;
typedef int cublasOperation_t;   // CUBLAS_OP_N = 0, CUBLAS_OP_T = 1
typedef int cudaDataType;        // CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14
typedef int cublasComputeType_t; // CUBLAS_COMPUTE_32F = 68
typedef int cublasGemmAlgo_t;    // CUBLAS_GEMM_DEFAULT = -1
typedef struct CUstream_st* cudaStream_t;
typedef struct hsdb_lt_ctx* cublasLtHandle_t;
typedef struct hsdb_lt_desc* cublasLtMatmulDesc_t;
typedef struct hsdb_lt_layout* cublasLtMatrixLayout_t;
typedef struct hsdb_lt_pref* cublasLtMatmulPreference_t;
typedef int cublasLtMatmulDescAttributes_t;
typedef int cublasLtMatmulPreferenceAttributes_t;
typedef struct {
    unsigned long long data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;
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

// HSDB_BLASLT_FUNCS are cuBLASLt's, for the block-scaled fp8 GEMM
// (cuBLAS 12.9 and later on Hopper; optional: hsdb_blaslt_open reports
// their absence and only that GEMM needs them).
#define HSDB_BLASLT_FUNCS(X)                                                                               \
    X(cublasLtCreate, cublasLtCreate, (cublasLtHandle_t * h), (h))                                         \
    X(cublasLtDestroy, cublasLtDestroy, (cublasLtHandle_t h), (h))                                         \
    X(cublasLtMatmulDescCreate, cublasLtMatmulDescCreate,                                                  \
      (cublasLtMatmulDesc_t * d, cublasComputeType_t c, cudaDataType s), (d, c, s))                        \
    X(cublasLtMatmulDescDestroy, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t d), (d))                 \
    X(cublasLtMatmulDescSetAttribute, cublasLtMatmulDescSetAttribute,                                      \
      (cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void* buf, size_t n), (d, a, buf, n)) \
    X(cublasLtMatrixLayoutCreate, cublasLtMatrixLayoutCreate,                                              \
      (cublasLtMatrixLayout_t * l, cudaDataType t, uint64_t rows, uint64_t cols, int64_t ld),             \
      (l, t, rows, cols, ld))                                                                              \
    X(cublasLtMatrixLayoutDestroy, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t l), (l))           \
    X(cublasLtMatmulPreferenceCreate, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * p), (p)) \
    X(cublasLtMatmulPreferenceDestroy, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t p), (p)) \
    X(cublasLtMatmulPreferenceSetAttribute, cublasLtMatmulPreferenceSetAttribute,                          \
      (cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void* buf, size_t n),   \
      (p, a, buf, n))                                                                                      \
    X(cublasLtMatmulAlgoGetHeuristic, cublasLtMatmulAlgoGetHeuristic,                                      \
      (cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,     \
       cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D, cublasLtMatmulPreference_t p, int req,         \
       cublasLtMatmulHeuristicResult_t* res, int* got),                                                    \
      (h, d, A, B, C, D, p, req, res, got))                                                                \
    X(cublasLtMatmul, cublasLtMatmul,                                                                      \
      (cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void* alpha, const void* A, cublasLtMatrixLayout_t Ad, \
       const void* B, cublasLtMatrixLayout_t Bd, const void* beta, const void* C, cublasLtMatrixLayout_t Cd, \
       void* D, cublasLtMatrixLayout_t Dd, const cublasLtMatmulAlgo_t* algo, void* ws, size_t wsz,        \
       cudaStream_t s),                                                                                    \
      (h, d, alpha, A, Ad, B, Bd, beta, C, Cd, D, Dd, algo, ws, wsz, s))

#ifndef HSDB_REAL_HEADERS
#define HSDB_PROTO(name, sym, params, args) cublasStatus_t hsdb_##name params;
HSDB_BLAS_FUNCS(HSDB_PROTO)
HSDB_BLASLT_FUNCS(HSDB_PROTO)
#undef HSDB_PROTO
// hsdb_blaslt_open resolves HSDB_BLASLT_FUNCS from the cuBLASLt of the
// cuBLAS hsdb_blas_open opened (its lt argument, or lib's name with
// libcublas replaced by libcublasLt). Returns NULL on success, else what is
// missing.
const char* hsdb_blaslt_open(void);
// hsdb_lt_fp8_block_gemm computes, with cuBLASLt, the column-major D [m,
// n] bf16 = op(A)·B for A fp8 e4m3 stored [k, m] (transa T, ld k) scaled
// per 128×128 block (ascale: [ceil(m/128)][ld_as] f32, k-blocks
// contiguous, ld_as = ceil(k/128) rounded up to 4) and B fp8 e4m3 [k, n]
// (ld k) scaled per 1×128 along k (bscale: [ceil(k/128)][n] f32, n
// contiguous) — a row-major y [n, m] = x [n, k] · W [m, k]ᵀ. amode and
// bmode are the cublasLtMatmulMatrixScale_t values of those scalings.
// When *have is 0 it only queries the heuristic (workspace up to wsz
// bytes): algo (64 bytes) gets the chosen algorithm, *need its workspace,
// *have 1, and nothing runs; with *have = 1 it runs algo with the
// workspace ws of wsz bytes on stream s. Returns the first failing status.
cublasStatus_t hsdb_lt_fp8_block_gemm(cublasLtHandle_t h, int m, int n, int k, unsigned long long A,
                                      unsigned long long ascale, unsigned long long B, unsigned long long bscale,
                                      unsigned long long D, int amode, int bmode, cublasLtMatmulAlgo_t* algo,
                                      int* have, unsigned long long* need, unsigned long long ws,
                                      unsigned long long wsz, cudaStream_t s);
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
