// moe.cu: MoE dispatch and combine (the permute / unpermute of vLLM's
// fused_moe, done as explicit row moves so every step can be inspected).
#include "common.cuh"

// gather_rows_DT: out[i, :] = src[idx[i], :] for i < n (dispatch: collect the
// tokens routed to one expert). out [n, cols], src [*, cols], idx [n] int32.
// One block per output row.
template <typename T>
__device__ void gather_rows(st<T>* out, const st<T>* src, const int* idx, int cols) {
    long long i = blockIdx.x;
    const st<T>* row = src + (long long)idx[i] * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[i * cols + c] = row[c];
}

// moe_combine_DT: the weighted scatter-add of expert outputs back to tokens,
// written as a gather so it is deterministic and needs no atomics:
//   out[t, :] = (accumulate ? out[t, :] : 0) + sum_{k<topk} weight[t*topk+k] * src[rows[t*topk+k], :]
// summed in f32 in k order and rounded once. rows[t*topk+k] is the row of
// src (the expert outputs, [*, cols]) holding token t's k-th expert, or -1
// for a slot to skip (an expert on another rank under expert parallelism).
// weight [tokens*topk] f32. One block per token.
template <typename T>
__device__ void moe_combine(st<T>* out, const st<T>* src, const int* rows, const float* weight, int topk,
                            int cols, int accumulate) {
    long long t = blockIdx.x;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float acc = accumulate ? elem<T>::load(out, t * cols + c) : 0.f;
        for (int k = 0; k < topk; k++) {
            int r = rows[t * topk + k];
            if (r >= 0) acc += weight[t * topk + k] * elem<T>::load(src, (long long)r * cols + c);
        }
        elem<T>::store(out, t * cols + c, acc);
    }
}

#define INST(name, T)                                                                                 \
    extern "C" __global__ void gather_rows_##name(st<T>* out, const st<T>* src, const int* idx, int cols) { \
        gather_rows<T>(out, src, idx, cols);                                                          \
    }                                                                                                 \
    extern "C" __global__ void moe_combine_##name(st<T>* out, const st<T>* src, const int* rows,      \
                                                  const float* weight, int topk, int cols,            \
                                                  int accumulate) {                                   \
        moe_combine<T>(out, src, rows, weight, topk, cols, accumulate);                               \
    }
HSDB_DTYPES(INST)
