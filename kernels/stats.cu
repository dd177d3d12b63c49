// stats.cu: one-pass moments of a 2-D slice, field for field the
// accumulators of engine/tensor.Moments: element count, NaN count, ±Inf
// count, exact-zero count, and over the finite elements the f64 sum, sum of
// squares, min, max and largest magnitude. Min, max and absmax are 0 when no
// element is finite.
//
// Two launches: stats_DT writes one partial per block over the slice
// x[r0:r1, c0:c1] of a row-major tensor with row length ld; stats_final
// folds n partials into one. Only the final 72-byte struct crosses to the
// host.
#include "common.cuh"

// moments matches tensor.Moments' layout (9 × 8 bytes, int64 then float64),
// so the host reads it directly.
struct moments {
    long long count, nan, inf, zeros;
    double sum, sumsq, min, max, absmax;
};

__device__ __forceinline__ void m_init(moments& m) {
    m.count = m.nan = m.inf = m.zeros = 0;
    m.sum = m.sumsq = 0;
    m.min = __longlong_as_double(0x7ff0000000000000ll);   // +Inf
    m.max = __longlong_as_double(0xfff0000000000000ll);   // -Inf
    m.absmax = 0;
}

__device__ __forceinline__ void m_add(moments& m, float v) {
    m.count++;
    if (isnan(v)) { m.nan++; return; }
    if (isinf(v)) { m.inf++; return; }
    if (v == 0.f) m.zeros++;
    double d = (double)v;
    m.sum += d;
    m.sumsq += d * d;
    m.min = fmin(m.min, d);
    m.max = fmax(m.max, d);
    m.absmax = fmax(m.absmax, fabs(d));
}

__device__ __forceinline__ void m_merge(moments& m, const moments& o) {
    m.count += o.count; m.nan += o.nan; m.inf += o.inf; m.zeros += o.zeros;
    m.sum += o.sum; m.sumsq += o.sumsq;
    m.min = fmin(m.min, o.min); m.max = fmax(m.max, o.max); m.absmax = fmax(m.absmax, o.absmax);
}

__device__ __forceinline__ moments m_shfl(const moments& m, int o) {
    moments r;
    r.count = __shfl_xor_sync(0xffffffffu, m.count, o);
    r.nan = __shfl_xor_sync(0xffffffffu, m.nan, o);
    r.inf = __shfl_xor_sync(0xffffffffu, m.inf, o);
    r.zeros = __shfl_xor_sync(0xffffffffu, m.zeros, o);
    r.sum = __shfl_xor_sync(0xffffffffu, m.sum, o);
    r.sumsq = __shfl_xor_sync(0xffffffffu, m.sumsq, o);
    r.min = __shfl_xor_sync(0xffffffffu, m.min, o);
    r.max = __shfl_xor_sync(0xffffffffu, m.max, o);
    r.absmax = __shfl_xor_sync(0xffffffffu, m.absmax, o);
    return r;
}

// block_reduce leaves the block's total in thread 0's m. blockDim.x is a
// multiple of 32.
__device__ void block_reduce(moments& m) {
    __shared__ moments warps[32];
    for (int o = 16; o > 0; o >>= 1) m_merge(m, m_shfl(m, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warps[warp] = m;
    __syncthreads();
    if (warp == 0) {
        if (lane < (int)(blockDim.x >> 5)) m = warps[lane];
        else m_init(m);
        for (int o = 16; o > 0; o >>= 1) m_merge(m, m_shfl(m, o));
    }
}

// Rows are spread over gridDim.x and each row's columns over gridDim.y
// blocks; partials has gridDim.x*gridDim.y entries.
template <typename T>
__device__ void stats(moments* partials, const st<T>* x, long long ld, long long r0, long long r1,
                      long long c0, long long c1) {
    moments m;
    m_init(m);
    long long cstep = (long long)gridDim.y * blockDim.x;
    for (long long r = r0 + blockIdx.x; r < r1; r += gridDim.x) {
        const st<T>* row = x + r * ld;
        for (long long c = c0 + (long long)blockIdx.y * blockDim.x + threadIdx.x; c < c1; c += cstep)
            m_add(m, elem<T>::load(row, c));
    }
    block_reduce(m);
    if (threadIdx.x == 0) partials[(long long)blockIdx.y * gridDim.x + blockIdx.x] = m;
}

#define INST(name, T)                                                                                \
    extern "C" __global__ void stats_##name(moments* partials, const st<T>* x, long long ld,         \
                                            long long r0, long long r1, long long c0, long long c1) { \
        stats<T>(partials, x, ld, r0, r1, c0, c1);                                                   \
    }
HSDB_DTYPES(INST)

// stats_final folds partials [n] into out[0]; launch with one block.
extern "C" __global__ void stats_final(moments* out, const moments* partials, int n) {
    moments m;
    m_init(m);
    for (int i = threadIdx.x; i < n; i += blockDim.x) m_merge(m, partials[i]);
    block_reduce(m);
    if (threadIdx.x == 0) {
        if (m.count - m.nan - m.inf == 0) m.min = m.max = m.absmax = 0;
        out[0] = m;
    }
}
