// fp8.cu: block-scaled fp8 weights kept on the GPU (DeepSeek-V3's
// float8_e4m3fn weight + float32 weight_scale_inv per bh × bw block, HF
// FineGrainedFP8 / DeepSeek-V3 inference/kernel.py weight_dequant) widened
// just before a GEMM reads them: a batch of weights in one launch, so a MoE
// layer's experts need one launch per chunk, not one per expert.
#include "common.cuh"
#include "moe_widen.cuh"

// fp8_dequant_batch_DT: for b = blockIdx.y < batch, weight b is w[b]
// ([rows, cols] fp8, row-major) with scales s[b] ([ceil(rows/bh),
// ceil(cols/bw)] f32); out + b*rows*cols [rows, cols] DT receives
// f32(w) · scale, rounded once (exactly tensor.Quantized.Dequantize, then
// one rounding to DT). w and s are device arrays of device addresses. With
// vec != 0 (cols and bw multiples of 8, rows·cols/8 < 2^32, every w[b]
// 8-byte aligned and out 32-byte aligned) each thread widens 8 consecutive
// elements of one scale block with one 8-byte load and 16-byte stores.
// fp8_store8 writes 8 consecutive elements v to p (16-byte aligned for
// bf16/f16, 32-byte for f32) with 16-byte stores, each rounded once.
template <typename T>
__device__ __forceinline__ void fp8_store8(st<T>* p, const float (&v)[8]);
template <>
__device__ __forceinline__ void fp8_store8<float>(float* p, const float (&v)[8]) {
    ((float4*)p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    ((float4*)p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}
template <typename T>
__device__ __forceinline__ void fp8_store8(st<T>* p, const float (&v)[8]) {
    unsigned u[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        st<T> lo, hi;
        elem<T>::store(&lo, 0, v[2 * j]);
        elem<T>::store(&hi, 0, v[2 * j + 1]);
        u[j] = (unsigned)lo | ((unsigned)hi << 16);
    }
    *(uint4*)p = make_uint4(u[0], u[1], u[2], u[3]);
}

// fp8_bf16 is true for bf16 outputs, which the vec path widens with
// mg_fp8x8 (cvt.rn.f16x2.e4m3x2, an f32 product, cvt.rn.bf16x2.f32: f32(q)
// · scale rounded once to nearest even, as the software widening below;
// TestFP8DequantBF16Exactly compares every byte value with the
// float8_e4m3fn table): about five instructions per pair of values where
// the software widening and rounding take about forty, which made this
// kernel, not memory, the bound of a dense fp8 layer's widening.
template <typename T>
constexpr bool fp8_bf16 = false;
template <>
constexpr bool fp8_bf16<bf16> = true;

template <typename T>
__device__ void fp8_dequant_batch(st<T>* out, const unsigned long long* w, const unsigned long long* s, long long rows,
                                  long long cols, int bh, int bw, int vec) {
    const long long b = blockIdx.y;
    const fp8_t* wb = (const fp8_t*)w[b];
    const float* sb = (const float*)s[b];
    st<T>* ob = out + b * rows * cols;
    const long long scols = (cols + bw - 1) / bw;
    if (vec) {
        // 8 elements per step; a matrix of fewer than 2^34 elements keeps
        // the step index and its row in 32 bits (cheap division), and the
        // scale block of power-of-two sides (DeepSeek-V3's 128 × 128) is
        // found by shifts.
        const unsigned c8 = (unsigned)(cols / 8), n8 = (unsigned)(rows * cols / 8);
        const bool pow2 = (bh & (bh - 1)) == 0 && (bw & (bw - 1)) == 0;
        const int lh = __ffs(bh) - 1, lw = __ffs(bw) - 1;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += gridDim.x * blockDim.x) {
            unsigned r = i / c8, c = (i - r * c8) * 8;
            float sc = sb[(long long)(pow2 ? r >> lh : r / bh) * scols + (pow2 ? c >> lw : c / bw)];
            uint2 q = ((const uint2*)wb)[i];
            if constexpr (fp8_bf16<T>) {  // the hardware conversions (moe_widen.cuh), the same bits
                *(uint4*)(ob + (long long)i * 8) = mg_fp8x8(q, sc);
                continue;
            }
            float v[8];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                v[j] = fp8e4m3_to_f32((fp8_t)(q.x >> (8 * j))) * sc;
                v[4 + j] = fp8e4m3_to_f32((fp8_t)(q.y >> (8 * j))) * sc;
            }
            fp8_store8<T>(ob + (long long)i * 8, v);
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

// fp8_act_group is one warp's group of 128 columns in the per-token-group
// activation quantization (fp8_act_quant, fp8_act_fake_quant_bf16): the
// group's token t and column block g, the element offset base of the
// lane's four values v, and the scale s = max(amax, 1e-10) / 448 (amax
// the largest |x| of the group, reduced over the warp's lanes, NaN
// ignored by fmaxf). ok is false for a warp past tokens · cols/128 groups
// (such warps leave whole: blockDim is a multiple of 32).
struct fp8_act_group {
    long long t, g, base;
    float v[4], s;
    bool ok;
};

// fp8_act_group_load fills fp8_act_group for this warp from x [tokens,
// cols] (cols a multiple of 128), one warp per group, four values per
// lane.
template <typename T>
__device__ __forceinline__ fp8_act_group fp8_act_group_load(const st<T>* x, long long tokens, long long cols) {
    fp8_act_group r;
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    const long long groups = cols >> 7;
    r.ok = w < tokens * groups;
    if (!r.ok) return r;
    r.t = w / groups;
    r.g = w - r.t * groups;
    r.base = r.t * cols + r.g * 128 + lane * 4;
    float a = 0.f;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        r.v[j] = elem<T>::load(x, r.base + j);
        a = fmaxf(a, fabsf(r.v[j]));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
    r.s = fmaxf(a, 1e-10f) / 448.f;
    return r;
}

// fp8_e4m3x2 is float8_e4m3fn(lo / s) in the low byte and (hi / s) in the
// high one: each quotient rounded once to nearest even, saturated to ±448
// (a NaN stays NaN).
__device__ __forceinline__ unsigned short fp8_e4m3x2(float lo, float hi, float s) {
    unsigned short p;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(p) : "f"(hi / s), "f"(lo / s));
    return p;
}

// fp8_act_quant_DT quantizes activations for the block-scaled fp8 GEMM
// (cuBLASLt VEC128_32F; vLLM's per_token_group_quant_fp8 with group 128,
// DeepSeek-V3 inference/kernel.py's act_quant): x [tokens, cols] DT
// (cols a multiple of 128) in groups of 128 consecutive columns; each
// group's scale s (fp8_act_group) goes to sc[g·sld + t] (f32, tokens
// contiguous, sld >= tokens: the layout cuBLASLt reads), and q [tokens,
// cols] gets float8_e4m3fn(x / s) (fp8_e4m3x2).
template <typename T>
__device__ void fp8_act_quant(const st<T>* x, unsigned* q, float* sc, long long tokens, long long cols, long long sld) {
    const fp8_act_group r = fp8_act_group_load<T>(x, tokens, cols);
    if (!r.ok) return;
    const unsigned lo = fp8_e4m3x2(r.v[0], r.v[1], r.s), hi = fp8_e4m3x2(r.v[2], r.v[3], r.s);
    q[r.base >> 2] = lo | (hi << 16);
    if ((threadIdx.x & 31) == 0) sc[r.g * sld + r.t] = r.s;
}

#define INSTQ(name, T)                                                                                  \
    extern "C" __global__ void fp8_act_quant_##name(const st<T>* x, unsigned* q, float* sc, long long tokens, \
                                                    long long cols, long long sld) {                     \
        fp8_act_quant<T>(x, q, sc, tokens, cols, sld);                                                   \
    }
HSDB_DTYPES(INSTQ)

// fp8_act_fake_quant rounds activations through W8A8's fp8 quantization
// for the GEMMs that take bf16 inputs (the routed experts' grouped
// kernels under --w8a8): out [tokens, cols] bf16 = bf16(f32(q) · s), q
// and s as fp8_act_quant computes them per group of 128 columns (the
// product in f32, one rounding to bf16 — within 2^-9 of q · s, far below
// fp8's own 2^-4). out may be x (each lane reads its four values before
// writing them). The groups are any 128-column blocks whose columns
// stay together: a copy permuted within blocks of 32 or 64 (PermuteK)
// quantizes as the original.
extern "C" __global__ void fp8_act_fake_quant_bf16(const bf16_t* x, bf16_t* out, long long tokens, long long cols) {
    const fp8_act_group r = fp8_act_group_load<bf16>(x, tokens, cols);
    if (!r.ok) return;
#pragma unroll
    for (int j = 0; j < 4; j += 2) {
        const unsigned short p = fp8_e4m3x2(r.v[j], r.v[j + 1], r.s);
        elem<bf16>::store(out, r.base + j, fp8e4m3_to_f32((fp8_t)(p & 0xff)) * r.s);
        elem<bf16>::store(out, r.base + j + 1, fp8e4m3_to_f32((fp8_t)(p >> 8)) * r.s);
    }
}
