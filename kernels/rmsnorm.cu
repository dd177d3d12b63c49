// rmsnorm.cu: RMSNorm and vLLM's fused residual add + RMSNorm.
//
// RMSNorm (Zhang & Sennrich 2019; HF LlamaRMSNorm, vLLM RMSNorm):
//   out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w
// computed in f32 and rounded once to the storage type.
//
// Fused add + RMSNorm (vLLM fused_add_rms_norm):
//   res_out[r, :] = x[r, :] + res[r, :]          (rounded to the storage type)
//   out[r, :]     = RMSNorm(res_out[r, :]) * w   (from the rounded sum, as vLLM
//                                                 normalises the stored residual)
// One block per row; rows are [rows, cols] contiguous. out may alias x and
// res_out may alias res. When cols is a whole number of 16-byte chunks and
// every pointer is 16-byte aligned, each thread moves 16 bytes at a time
// (8 bf16/f16 or 4 f32 elements; the same arithmetic per element, the sum
// of squares gathered in another order).
#include "common.cuh"

// chunk is 16 bytes of storage elements.
template <typename T>
union chunk {
    static const int N = 16 / sizeof(st<T>);
    uint4 u;
    st<T> e[N];
};

__device__ __forceinline__ bool aligned16(const void* a, const void* b, const void* c, const void* d) {
    return (((unsigned long long)a | (unsigned long long)b | (unsigned long long)c | (unsigned long long)d) & 15) == 0;
}

template <typename T>
__device__ void rmsnorm_chunks(st<T>* out, const st<T>* x, const st<T>* w, int cols, float eps) {
    __shared__ float scratch[32];
    const int N = chunk<T>::N, n = cols / N;
    long long base = (long long)blockIdx.x * n;
    const uint4* x4 = (const uint4*)x + base;
    uint4* o4 = (uint4*)out + base;
    const uint4* w4 = (const uint4*)w;
    float ss = 0.f;
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        chunk<T> v;
        v.u = x4[c];
#pragma unroll
        for (int j = 0; j < N; j++) {
            float f = elem<T>::load(v.e, j);
            ss += f * f;
        }
    }
    float inv = rsqrtf(block_sum(ss, scratch) / (float)cols + eps);
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        chunk<T> v, g, y;
        v.u = x4[c];
        g.u = w4[c];
#pragma unroll
        for (int j = 0; j < N; j++) elem<T>::store(y.e, j, elem<T>::load(v.e, j) * inv * elem<T>::load(g.e, j));
        o4[c] = y.u;
    }
}

template <typename T>
__device__ void add_rmsnorm_chunks(st<T>* out, st<T>* res_out, const st<T>* x, const st<T>* res, const st<T>* w,
                                   int cols, float eps) {
    __shared__ float scratch[32];
    const int N = chunk<T>::N, n = cols / N;
    long long base = (long long)blockIdx.x * n;
    const uint4 *x4 = (const uint4*)x + base, *r4 = (const uint4*)res + base, *w4 = (const uint4*)w;
    uint4 *o4 = (uint4*)out + base, *s4 = (uint4*)res_out + base;
    float ss = 0.f;
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        chunk<T> a, b, sum;
        a.u = x4[c];
        b.u = r4[c];
#pragma unroll
        for (int j = 0; j < N; j++) {
            elem<T>::store(sum.e, j, elem<T>::load(a.e, j) + elem<T>::load(b.e, j));
            float f = elem<T>::load(sum.e, j);
            ss += f * f;
        }
        s4[c] = sum.u;
    }
    float inv = rsqrtf(block_sum(ss, scratch) / (float)cols + eps);
    // Each thread re-reads only the chunks it wrote itself.
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        chunk<T> v, g, y;
        v.u = s4[c];
        g.u = w4[c];
#pragma unroll
        for (int j = 0; j < N; j++) elem<T>::store(y.e, j, elem<T>::load(v.e, j) * inv * elem<T>::load(g.e, j));
        o4[c] = y.u;
    }
}

template <typename T>
__device__ void rmsnorm(st<T>* out, const st<T>* x, const st<T>* w, int cols, float eps) {
    if (cols % chunk<T>::N == 0 && aligned16(out, x, w, w)) {
        rmsnorm_chunks<T>(out, x, w, cols, eps);
        return;
    }
    __shared__ float scratch[32];
    long long base = (long long)blockIdx.x * cols;
    float ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = elem<T>::load(x, base + c);
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss, scratch) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = elem<T>::load(x, base + c);
        elem<T>::store(out, base + c, v * inv * elem<T>::load(w, c));
    }
}

template <typename T>
__device__ void add_rmsnorm(st<T>* out, st<T>* res_out, const st<T>* x, const st<T>* res,
                            const st<T>* w, int cols, float eps) {
    if (cols % chunk<T>::N == 0 && aligned16(out, res_out, x, res) && aligned16(w, w, w, w)) {
        add_rmsnorm_chunks<T>(out, res_out, x, res, w, cols, eps);
        return;
    }
    __shared__ float scratch[32];
    long long base = (long long)blockIdx.x * cols;
    float ss = 0.f;
    // First pass: write the rounded sum, accumulate the square of what was
    // stored. Each thread re-reads only the elements it wrote itself, so no
    // barrier is needed between the two passes beyond block_sum's.
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = elem<T>::load(x, base + c) + elem<T>::load(res, base + c);
        elem<T>::store(res_out, base + c, v);
        v = elem<T>::load(res_out, base + c);
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss, scratch) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = elem<T>::load(res_out, base + c);
        elem<T>::store(out, base + c, v * inv * elem<T>::load(w, c));
    }
}

#define INST(name, T)                                                                         \
    extern "C" __global__ void rmsnorm_##name(st<T>* out, const st<T>* x, const st<T>* w,     \
                                              int cols, float eps) {                          \
        rmsnorm<T>(out, x, w, cols, eps);                                                     \
    }                                                                                         \
    extern "C" __global__ void add_rmsnorm_##name(st<T>* out, st<T>* res_out, const st<T>* x, \
                                                  const st<T>* res, const st<T>* w, int cols, \
                                                  float eps) {                                \
        add_rmsnorm<T>(out, res_out, x, res, w, cols, eps);                                   \
    }
HSDB_DTYPES(INST)
