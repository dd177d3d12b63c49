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

// Eight consecutive elements as f32 from a 16-byte-aligned address, and
// back (rounded once): one or two vector accesses instead of eight.
template <typename X> struct vec8;
template <> struct vec8<bf16> {
    static __device__ __forceinline__ void load(const bf16_t* p, float* v) {
        uint4 u = *(const uint4*)p;
        unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[2 * i] = __uint_as_float(w[i] << 16);
            v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
    static __device__ __forceinline__ void store(bf16_t* p, const float* v) {
        uint4 u;
        u.x = f32_to_bf16(v[0]) | ((unsigned)f32_to_bf16(v[1]) << 16);
        u.y = f32_to_bf16(v[2]) | ((unsigned)f32_to_bf16(v[3]) << 16);
        u.z = f32_to_bf16(v[4]) | ((unsigned)f32_to_bf16(v[5]) << 16);
        u.w = f32_to_bf16(v[6]) | ((unsigned)f32_to_bf16(v[7]) << 16);
        *(uint4*)p = u;
    }
};
template <> struct vec8<f16> {
    static __device__ __forceinline__ void load(const f16_t* p, float* v) {
        uint4 u = *(const uint4*)p;
        unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[2 * i] = f16_to_f32((f16_t)(w[i] & 0xffffu));
            v[2 * i + 1] = f16_to_f32((f16_t)(w[i] >> 16));
        }
    }
    static __device__ __forceinline__ void store(f16_t* p, const float* v) {
        uint4 u;
        u.x = f32_to_f16(v[0]) | ((unsigned)f32_to_f16(v[1]) << 16);
        u.y = f32_to_f16(v[2]) | ((unsigned)f32_to_f16(v[3]) << 16);
        u.z = f32_to_f16(v[4]) | ((unsigned)f32_to_f16(v[5]) << 16);
        u.w = f32_to_f16(v[6]) | ((unsigned)f32_to_f16(v[7]) << 16);
        *(uint4*)p = u;
    }
};
template <> struct vec8<float> {
    static __device__ __forceinline__ void load(const float* p, float* v) {
        float4 a = *(const float4*)p, b = *(const float4*)(p + 4);
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    }
    static __device__ __forceinline__ void store(float* p, const float* v) {
        *(float4*)p = make_float4(v[0], v[1], v[2], v[3]);
        *(float4*)(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
    }
};

// The eight weights of packed word v at scale s.
__device__ __forceinline__ void int4_word(unsigned v, float s, float* w) {
#pragma unroll
    for (int k = 0; k < 8; k++) w[k] = (float)((int)((v >> (4 * k)) & 0xfu) - 8) * s;
}

// int4_dequant_DST: out [rows, cols] = the dequantized weight, rounded once
// to DST (the bf16/f16/f32 scratch a cuBLAS GEMM then reads). One word (8
// columns) per thread iteration, stored with one vector store when cols % 8
// == 0 and group % 8 == 0 (out 16-byte aligned), element by element
// otherwise.
template <typename D>
__device__ __forceinline__ void int4_dequant(st<D>* out, const unsigned* packed, const void* scale, int scale_f32,
                                             long long rows, long long cols, long long words, long long groups,
                                             int group) {
    bool vec = cols % 8 == 0 && group % 8 == 0;
    GRID_STRIDE(i, rows * words) {
        long long r = i / words, w = i % words;
        unsigned v = packed[i];
        if (vec) {
            float f[8];
            int4_word(v, int4_scale(scale, scale_f32, r * groups + (w * 8) / group), f);
            vec8<D>::store(out + r * cols + w * 8, f);
            continue;
        }
        for (int k = 0; k < 8; k++) {
            long long c = w * 8 + k;
            if (c >= cols) break;
            float q = (float)((int)((v >> (4 * k)) & 0xfu) - 8);
            elem<D>::store(out, r * cols + c, q * int4_scale(scale, scale_f32, r * groups + c / group));
        }
    }
}

#define INT4_DEQUANT(dn, D)                                                                            \
    extern "C" __global__ void int4_dequant_##dn(st<D>* out, const unsigned* packed, const void* scale,    \
                                                 int scale_f32, long long rows, long long cols,        \
                                                 long long words, long long groups, int group) {       \
        int4_dequant<D>(out, packed, scale, scale_f32, rows, cols, words, groups, group);               \
    }
HSDB_DTYPES(INT4_DEQUANT)

// int4_gemvTT_X: y[t, n] = Σ_c x[t, c] · w[n, c] for the TT tokens of this
// block's chunk (tokens blockIdx.y·TT .. +TT, at most T), reading each
// packed word once per chunk: the W4A16 path for few tokens per weight
// (decode, a routed expert's handful of tokens), bound by reading the weight,
// of which int4 reads a quarter of bf16's bytes. A block computes R
// consecutive output rows (each activation vector loaded serves R rows); its
// warps split the columns (lane j of warp w takes 4 words = 32 columns = one
// scale group of each row at a time, U groups in flight) and their partial
// sums meet in shared memory. Requires cols % 32 == 0, group % 32 == 0 and
// x 16-byte aligned (the caller falls back to int4_dequant + GEMM
// otherwise). x is [T, cols] and y [T, rows] with row stride ldy (≥ rows:
// a column block of a wider output, as an expert's gate and up halves of
// w13's), both of X.
#define INT4_WARPS 4
template <typename X, int TT, int R, int U>
__device__ __forceinline__ void int4_gemv(st<X>* y, const st<X>* x, const unsigned* packed, const void* scale,
                                          int scale_f32, int T, int cols, int rows, int ldy, int groups,
                                          int group) {
    __shared__ float red[INT4_WARPS][TT][R];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int n0 = blockIdx.x * R;
    int t0 = blockIdx.y * TT;
    int nt = min(TT, T - t0), nr = min(R, rows - n0);
    float acc[TT][R];
#pragma unroll
    for (int t = 0; t < TT; t++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[t][r] = 0.f;
    int quads = cols / 32;
    for (int j0 = warp * 32 + lane; j0 < quads; j0 += INT4_WARPS * 32 * U) {
        uint4 p[U][R];
        float s[U][R];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int j = j0 + INT4_WARPS * 32 * u;
#pragma unroll
            for (int r = 0; r < R; r++) {
                p[u][r] = make_uint4(0x88888888u, 0x88888888u, 0x88888888u, 0x88888888u);  // q = 0
                s[u][r] = 0.f;
                if (j < quads && r < nr) {
                    long long n = n0 + r;
                    p[u][r] = ((const uint4*)(packed + n * (cols / 8)))[j];
                    s[u][r] = int4_scale(scale, scale_f32, n * groups + (j * 32) / group);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            int j = j0 + INT4_WARPS * 32 * u;
            if (j >= quads) break;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float w[R][8];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    unsigned v = q == 0 ? p[u][r].x : q == 1 ? p[u][r].y : q == 2 ? p[u][r].z : p[u][r].w;
                    int4_word(v, s[u][r], w[r]);
                }
#pragma unroll
                for (int t = 0; t < TT; t++) {
                    if (t < nt) {
                        float xv[8];
                        vec8<X>::load(x + (long long)(t0 + t) * cols + j * 32 + q * 8, xv);
#pragma unroll
                        for (int r = 0; r < R; r++)
#pragma unroll
                            for (int k = 0; k < 8; k++) acc[t][r] += w[r][k] * xv[k];
                    }
                }
            }
        }
    }
#pragma unroll
    for (int t = 0; t < TT; t++)
#pragma unroll
        for (int r = 0; r < R; r++) {
            float v = warp_sum(acc[t][r]);
            if (lane == 0) red[warp][t][r] = v;
        }
    __syncthreads();
    int i = threadIdx.x;
    if (i < TT * R) {
        int t = i / R, r = i % R;
        float v = 0.f;
#pragma unroll
        for (int w = 0; w < INT4_WARPS; w++) v += red[w][t][r];
        if (t < nt && r < nr) elem<X>::store(y, (long long)(t0 + t) * ldy + n0 + r, v);
    }
}

// Rows per block: 1 for one or two tokens (the most warps in flight), 4 for
// four or eight (each activation load serves four rows). INT4_WARPS warps.
#define INT4_GEMV_TT(xn, X, TT, R, U)                                                                  \
    extern "C" __global__ void int4_gemv##TT##_##xn(st<X>* y, const st<X>* x, const unsigned* packed,  \
                                                    const void* scale, int scale_f32, int T, int cols, \
                                                    int rows, int ldy, int groups, int group) {        \
        int4_gemv<X, TT, R, U>(y, x, packed, scale, scale_f32, T, cols, rows, ldy, groups, group);      \
    }
#define INT4_GEMV(xn, X) \
    INT4_GEMV_TT(xn, X, 1, 1, 4) INT4_GEMV_TT(xn, X, 2, 1, 4) INT4_GEMV_TT(xn, X, 4, 4, 2) INT4_GEMV_TT(xn, X, 8, 4, 2)
HSDB_DTYPES(INT4_GEMV)
