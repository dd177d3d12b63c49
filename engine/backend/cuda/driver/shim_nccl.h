// shim_nccl.h: the NCCL functions hsdb calls, opened with dlopen at run
// time (libnccl.so.2, or HSDB_NCCL). Types as in nccl.h (NCCL 2.x); NCCL's
// header is not packaged by Debian, so these declarations are checked by
// the GPU test (TestNCCLAllReduce) rather than by a compiler.
#pragma once
#include <stddef.h>

typedef int ncclResult_t;
typedef struct ncclComm* ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;  // NCCL_UNIQUE_ID_BYTES
typedef int ncclDataType_t;  // ncclInt8 0 ... ncclFloat16 6, ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9
typedef int ncclRedOp_t;     // ncclSum 0
#ifndef HSDB_REAL_HEADERS
typedef struct CUstream_st* cudaStream_t;
#endif

#define HSDB_NCCL_FUNCS(X)                                                                                  \
    X(ncclGetVersion, ncclGetVersion, (int* v), (v))                                                        \
    X(ncclGetUniqueId, ncclGetUniqueId, (ncclUniqueId * id), (id))                                          \
    X(ncclCommInitRank, ncclCommInitRank, (ncclComm_t * c, int nranks, ncclUniqueId id, int rank), (c, nranks, id, rank)) \
    X(ncclCommDestroy, ncclCommDestroy, (ncclComm_t c), (c))                                                \
    X(ncclCommGetAsyncError, ncclCommGetAsyncError, (ncclComm_t c, ncclResult_t * r), (c, r))               \
    X(ncclAllReduce, ncclAllReduce,                                                                         \
      (const void* send, void* recv, size_t count, ncclDataType_t dt, ncclRedOp_t op, ncclComm_t c, cudaStream_t s), \
      (send, recv, count, dt, op, c, s))                                                                    \
    X(ncclAllGather, ncclAllGather,                                                                         \
      (const void* send, void* recv, size_t count, ncclDataType_t dt, ncclComm_t c, cudaStream_t s),        \
      (send, recv, count, dt, c, s))

#define HSDB_PROTO(name, sym, params, args) ncclResult_t hsdb_##name params;
HSDB_NCCL_FUNCS(HSDB_PROTO)
#undef HSDB_PROTO
const char* hsdb_nccl_open(const char* lib);
const char* hsdb_nccl_error_string(ncclResult_t r);
// Integer device addresses from Go (see shim_blas.h).
ncclResult_t hsdb_nccl_all_reduce(unsigned long long send, unsigned long long recv, size_t count, ncclDataType_t dt,
                                  ncclComm_t c, cudaStream_t s);
ncclResult_t hsdb_nccl_all_gather(unsigned long long send, unsigned long long recv, size_t count, ncclDataType_t dt,
                                  ncclComm_t c, cudaStream_t s);
