// int4.cu: compressed-tensors pack-quantized int4 weights (W4A16, as
// Kimi-K2-Thinking and Kimi-K2.5 ship their routed experts) kept packed on
// the GPU. A weight [rows, cols] is
//   packed [rows, words] uint32, words = ceil(cols/8): column 8w+i in bits
//          [4i, 4i+4) of word w, stored as q+8 for q in [-8, 7]
//   scale  [rows, groups] bf16 (scale_f32 = 0) or f32 (scale_f32 = 1),
//          groups = ceil(cols/group)
// and w[r, c] = (nibble − 8) · scale[r, c/group] (compressed-tensors
// compressors/quantized_compressors/pack_quantized.py; tensor.QuantInt4Group).
// Every product q·scale is exact in f32 (4-bit × 8-bit mantissas) and every
// sum accumulates in f32.
#include "common.cuh"

__device__ __forceinline__ float int4_scale(const void* scale, int scale_f32, long long i) {
    return scale_f32 ? ((const float*)scale)[i] : bf16_to_f32(((const bf16_t*)scale)[i]);
}

// int4_dequant_DST: out [rows, cols] = the dequantized weight, rounded once
// to DST (the bf16/f16/f32 scratch a cuBLAS GEMM then reads). One word (8
// columns) per thread iteration.
#define INT4_DEQUANT(dn, D)                                                                         \
    extern "C" __global__ void int4_dequant_##dn(st<D>* out, const unsigned* packed, const void* scale, \
                                                 int scale_f32, long long rows, long long cols,     \
                                                 long long words, long long groups, int group) {    \
        GRID_STRIDE(i, rows * words) {                                                              \
            long long r = i / words, w = i % words;                                                 \
            unsigned v = packed[i];                                                                 \
            for (int k = 0; k < 8; k++) {                                                           \
                long long c = w * 8 + k;                                                            \
                if (c >= cols) break;                                                               \
                float q = (float)((int)((v >> (4 * k)) & 0xfu) - 8);                                \
                elem<D>::store(out, r * cols + c, q * int4_scale(scale, scale_f32, r * groups + c / group)); \
            }                                                                                       \
        }                                                                                           \
    }
HSDB_DTYPES(INT4_DEQUANT)

// int4_gemv_X: y[t, n] = Σ_c x[t, c] · w[n, c] for the tokens t of this
// block's chunk (blockIdx.y · 8 .. +8, at most T), reading each packed word
// once per chunk: the W4A16 path for few tokens per weight (decode, a
// routed expert's handful of tokens), where the GEMM is bound by reading
// the weight and int4 reads a quarter of bf16's bytes. One warp per output
// row n (blockDim.x/32 rows per block); lane j takes 4 words (32 columns,
// one scale group) at a time. Requires cols % 32 == 0 and group % 32 == 0
// (the caller falls back to int4_dequant + GEMM otherwise). x and y are
// [T, cols] and [T, rows] of X.
#define INT4_TT 8
template <typename X>
__device__ __forceinline__ void int4_gemv(st<X>* y, const st<X>* x, const unsigned* packed, const void* scale,
                                          int scale_f32, int T, int cols, int rows, int groups, int group) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int n = blockIdx.x * (blockDim.x >> 5) + warp;
    int t0 = blockIdx.y * INT4_TT;
    if (n >= rows) return;  // the whole warp leaves together
    int nt = min(INT4_TT, T - t0);
    float acc[INT4_TT];
#pragma unroll
    for (int t = 0; t < INT4_TT; t++) acc[t] = 0.f;
    const uint4* prow = (const uint4*)(packed + (long long)n * (cols / 8));
    int quads = cols / 32;
    for (int j = lane; j < quads; j += 32) {
        uint4 p = prow[j];
        float s = int4_scale(scale, scale_f32, (long long)n * groups + (j * 32) / group);
        unsigned ws[4] = {p.x, p.y, p.z, p.w};
        float wv[32];
#pragma unroll
        for (int k = 0; k < 32; k++) wv[k] = (float)((int)((ws[k >> 3] >> (4 * (k & 7))) & 0xfu) - 8) * s;
#pragma unroll
        for (int t = 0; t < INT4_TT; t++) {
            if (t < nt) {
                const st<X>* xr = x + (long long)(t0 + t) * cols + j * 32;
                float a = 0.f;
#pragma unroll
                for (int k = 0; k < 32; k++) a += wv[k] * elem<X>::load(xr, k);
                acc[t] += a;
            }
        }
    }
#pragma unroll
    for (int t = 0; t < INT4_TT; t++) {
        float v = warp_sum(acc[t]);
        if (lane == 0 && t < nt) elem<X>::store(y, (long long)(t0 + t) * rows + n, v);
    }
}

#define INT4_GEMV(xn, X)                                                                            \
    extern "C" __global__ void int4_gemv_##xn(st<X>* y, const st<X>* x, const unsigned* packed,     \
                                              const void* scale, int scale_f32, int T, int cols,   \
                                              int rows, int groups, int group) {                   \
        int4_gemv<X>(y, x, packed, scale, scale_f32, T, cols, rows, groups, group);                 \
    }
HSDB_DTYPES(INT4_GEMV)
