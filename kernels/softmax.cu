// softmax.cu: the masked softmax of attention computed as two GEMMs (HF's
// eager_attention_forward: softmax(q·kᵀ·scale + causal mask, dtype=f32)
// cast to the activation dtype, then ·v), used for long prefill sequences
// where cuBLAS's tensor-core GEMMs beat the tiled kernel of attention.cu.
//
// s [heads*qn, kn] f32 holds the scaled scores of qn consecutive query
// tokens of one sequence against kn consecutive cache keys whose first is at
// position key0 of that sequence; row r belongs to query r % qn (head
// r / qn). pos [qn] int32 are the queries' positions. Query i may attend to
// positions lo..pos[i], lo = max(0, pos[i]-window+1) with a sliding window
// (window > 0), else 0: exactly the keys attention.cu's kernels use.
//
//   p[r, j] = exp(s[r, j] - m_r) / Σ_valid exp(s[r, j'] - m_r)   for valid j
//   p[r, j] = 0                                                  otherwise
//
// with m_r the row's largest valid score, in f32 (PyTorch's softmax), rounded
// once to the storage type. A NaN score makes its row NaN, as in PyTorch. With
// cached = 1 the row is kept in kn floats of dynamic shared memory between the
// passes (one read of s); otherwise s is read three times. One block per row.
#include "common.cuh"

#define NEG_INF __int_as_float(0xff800000)

// block_max returns the maximum of v over the block to every thread (NaN
// wins, as torch.max). blockDim.x is a multiple of 32; scratch holds 32
// floats.
__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b); }

__device__ __forceinline__ float block_max(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = lane < nwarps ? scratch[lane] : NEG_INF;
    for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T>
__device__ void attn_softmax(st<T>* p, const float* s, const int* pos, int qn, int kn, int key0, int window,
                             int cached) {
    extern __shared__ float row[];
    __shared__ float scratch[32];
    long long r = blockIdx.x;
    int hi = pos[r % qn];
    int lo = window > 0 ? max(0, hi - window + 1) : 0;
    int jlo = max(lo - key0, 0), jhi = min(hi - key0, kn - 1);  // valid columns, inclusive
    const float* sr = s + r * kn;
    float m = NEG_INF;
    for (int j = jlo + threadIdx.x; j <= jhi; j += blockDim.x) {
        float v = sr[j];
        if (cached) row[j] = v;
        m = nan_max(m, v);
    }
    m = block_max(m, scratch);
    float sum = 0.f;
    // Each thread revisits only the columns it cached itself: no barrier
    // is needed between the passes beyond the reductions' own.
    for (int j = jlo + threadIdx.x; j <= jhi; j += blockDim.x) {
        float e = expf((cached ? row[j] : sr[j]) - m);
        if (cached) row[j] = e;
        sum += e;
    }
    sum = block_sum(sum, scratch);
    for (int j = threadIdx.x; j < kn; j += blockDim.x) {
        float v = 0.f;
        if (j >= jlo && j <= jhi) v = (cached ? row[j] : expf(sr[j] - m)) / sum;
        elem<T>::store(p, r * kn + j, v);
    }
}

#define INST(name, T)                                                                                \
    extern "C" __global__ void attn_softmax_##name(st<T>* p, const float* s, const int* pos, int qn,  \
                                                   int kn, int key0, int window, int cached) {        \
        attn_softmax<T>(p, s, pos, qn, kn, key0, window, cached);                                    \
    }
HSDB_DTYPES(INST)
