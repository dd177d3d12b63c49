// moe.cu: MoE dispatch and combine (the permute / unpermute of vLLM's
// fused_moe, done as explicit row moves so every step can be inspected).
#include "common.cuh"

// gather_rows_DT: out[i, :] = src[idx[i], :] for i < n (dispatch: collect the
// tokens routed to one expert). out [n, cols], src [src_rows, cols], idx [n]
// int32. An index outside [0, src_rows) gives a row of NaN, which the
// statistics show, instead of reading outside src (the host validates
// indices first). One block per output row.
template <typename T>
__device__ void gather_rows(st<T>* out, const st<T>* src, const int* idx, int cols, int src_rows) {
    long long i = blockIdx.x;
    int r = idx[i];
    if (r < 0 || r >= src_rows) {
        for (int c = threadIdx.x; c < cols; c += blockDim.x) elem<T>::store(out, i * cols + c, __int_as_float(0x7fc00000));
        return;
    }
    const st<T>* row = src + (long long)r * cols;
    st<T>* o = out + i * cols;
    // Rows of whole, aligned 16-byte chunks move as uint4.
    const int bytes = cols * (int)sizeof(st<T>);
    if ((bytes & 15) == 0 && (((unsigned long long)row | (unsigned long long)o) & 15) == 0) {
        const uint4* s4 = (const uint4*)row;
        uint4* o4 = (uint4*)o;
        for (int c = threadIdx.x; c < bytes / 16; c += blockDim.x) o4[c] = s4[c];
        return;
    }
    for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = row[c];
}

// moe_combine_DT: the weighted scatter-add of expert outputs back to tokens,
// written as a gather so it is deterministic and needs no atomics:
//   out[t, :] = (accumulate ? out[t, :] : 0) + sum_{k<topk} weight[t*topk+k] * src[rows[t*topk+k], :]
// summed in f32 in k order and rounded once. rows[t*topk+k] is the row of
// src (the expert outputs, [*, cols]) holding token t's k-th expert, or -1
// for a slot to skip (an expert on another rank under expert parallelism);
// a row >= src_rows contributes NaN rather than a read outside src.
// weight [tokens*topk] f32. One block per token.
template <typename T>
__device__ void moe_combine(st<T>* out, const st<T>* src, const int* rows, const float* weight, int topk,
                            int cols, int accumulate, int src_rows) {
    long long t = blockIdx.x;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float acc = accumulate ? elem<T>::load(out, t * cols + c) : 0.f;
        for (int k = 0; k < topk; k++) {
            int r = rows[t * topk + k];
            if (r >= src_rows) acc = __int_as_float(0x7fc00000);
            else if (r >= 0) acc += weight[t * topk + k] * elem<T>::load(src, (long long)r * cols + c);
        }
        elem<T>::store(out, t * cols + c, acc);
    }
}

#define INST(name, T)                                                                                 \
    extern "C" __global__ void gather_rows_##name(st<T>* out, const st<T>* src, const int* idx, int cols, \
                                                  int src_rows) {                                     \
        gather_rows<T>(out, src, idx, cols, src_rows);                                                \
    }                                                                                                 \
    extern "C" __global__ void moe_combine_##name(st<T>* out, const st<T>* src, const int* rows,      \
                                                  const float* weight, int topk, int cols,            \
                                                  int accumulate, int src_rows) {                     \
        moe_combine<T>(out, src, rows, weight, topk, cols, accumulate, src_rows);                     \
    }
HSDB_DTYPES(INST)
