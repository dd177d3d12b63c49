// fp8.cu: block-scaled fp8 weights kept on the GPU (DeepSeek-V3's
// float8_e4m3fn weight + float32 weight_scale_inv per bh × bw block, HF
// FineGrainedFP8 / DeepSeek-V3 inference/kernel.py weight_dequant) widened
// just before a GEMM reads them: a batch of weights in one launch, so a MoE
// layer's experts need one launch per chunk, not one per expert.
#include "common.cuh"

// fp8_dequant_batch_DT: for b = blockIdx.y < batch, weight b is w[b]
// ([rows, cols] fp8, row-major) with scales s[b] ([ceil(rows/bh),
// ceil(cols/bw)] f32); out + b*rows*cols [rows, cols] DT receives
// f32(w) · scale, rounded once (exactly tensor.Quantized.Dequantize, then
// one rounding to DT). w and s are device arrays of device addresses. With
// vec != 0 (cols and bw multiples of 8, every w[b] 8-byte aligned) each
// thread widens 8 consecutive elements of one scale block.
template <typename T>
__device__ void fp8_dequant_batch(st<T>* out, const unsigned long long* w, const unsigned long long* s, long long rows,
                                  long long cols, int bh, int bw, int vec) {
    const long long b = blockIdx.y;
    const fp8_t* wb = (const fp8_t*)w[b];
    const float* sb = (const float*)s[b];
    st<T>* ob = out + b * rows * cols;
    const long long scols = (cols + bw - 1) / bw;
    if (vec) {
        const long long n8 = rows * cols / 8;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += (long long)gridDim.x * blockDim.x) {
            long long e = i * 8, r = e / cols, c = e - r * cols;
            float sc = sb[(r / bh) * scols + c / bw];
            unsigned long long q = ((const unsigned long long*)wb)[i];
#pragma unroll
            for (int j = 0; j < 8; j++) elem<T>::store(ob, e + j, fp8e4m3_to_f32((fp8_t)(q >> (8 * j))) * sc);
        }
        return;
    }
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rows * cols; i += (long long)gridDim.x * blockDim.x) {
        long long r = i / cols, c = i - r * cols;
        elem<T>::store(ob, i, fp8e4m3_to_f32(wb[i]) * sb[(r / bh) * scols + c / bw]);
    }
}

#define INST(name, T)                                                                                         \
    extern "C" __global__ void fp8_dequant_batch_##name(st<T>* out, const unsigned long long* w,               \
                                                        const unsigned long long* s, long long rows,           \
                                                        long long cols, int bh, int bw, int vec) {             \
        fp8_dequant_batch<T>(out, w, s, rows, cols, bh, bw, vec);                                             \
    }
HSDB_DTYPES(INST)
