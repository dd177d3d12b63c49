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
// res_out may alias res.
#include "common.cuh"

template <typename T>
__device__ void rmsnorm(st<T>* out, const st<T>* x, const st<T>* w, int cols, float eps) {
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
