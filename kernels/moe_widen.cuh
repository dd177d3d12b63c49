// moe_widen.cuh: what the routed experts' grouped GEMMs share
// (moe_gemm.cu, mma.sync; moe_wgmma.cu, wgmma): the weight kinds, the row
// tile's expert, 16-byte cp.async copies, and the widening of stored
// expert weights (fp8 e4m3 with f32 block scales, packed int4 with bf16 or
// f32 group scales) to bf16, each value rounded once as the
// dequantize-on-load kernels round it (fp8.cu's fp8_dequant_batch,
// int4.cu's int4_dequant).
#pragma once
#include "common.cuh"

#define MG_BF16 0
#define MG_FP8 1
#define MG_INT4 2
#define MG_BK 64  // k columns per pipeline stage

__device__ __forceinline__ unsigned mg_smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// mg_cp16 copies 16 bytes from global src to shared dst, or writes 16 zero
// bytes when ok is false (src-size 0: nothing is read).
__device__ __forceinline__ void mg_cp16(void* dst, const void* src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(mg_smem_addr(dst)), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void mg_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void mg_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// mg_tile_expert returns the expert e whose row tiles hold row tile tile:
// tiles[e] <= tile < tiles[e+1] (tiles [nexp+1] from moe_gemm_tiles, tile <
// tiles[nexp]; experts without rows have tiles[e] == tiles[e+1] and are
// never returned), by binary search.
__device__ __forceinline__ int mg_tile_expert(const int* tiles, int nexp, int tile) {
    int lo = 0, hi = nexp;  // tiles[lo] <= tile < tiles[hi]
    while (hi - lo > 1) {
        int mid = (lo + hi) >> 1;
        if (tiles[mid] <= tile) lo = mid;
        else hi = mid;
    }
    return lo;
}

// mg_fp8x2 widens 2 float8_e4m3fn bytes b (lowest first) times scale sc
// to a bf16x2 (the first in the low half): each byte converted exactly
// (cvt.rn.f16x2.e4m3x2: every e4m3 value, subnormals and NaN included, is
// an f16), multiplied in f32 and
// rounded once (cvt.rn.bf16x2.f32, round to nearest even): f32(q)·scale
// rounded to bf16, as fp8_dequant_batch. (Placing the e4m3 bits into a
// bf16 and scaling by 2^120, which replaces three of the four conversions
// per pair with integer and bf16 arithmetic, measured slower on an H200:
// the grouped kernels' fp8 layer at 4096 tokens took 18.6 ms against
// 13.9.)
__device__ __forceinline__ unsigned mg_fp8x2(unsigned short b, float sc) {
    unsigned h2, w;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h2) : "h"(b));
    float lo = f16_to_f32((f16_t)(h2 & 0xffffu)) * sc, hi = f16_to_f32((f16_t)(h2 >> 16)) * sc;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
}
// mg_fp8x8 is mg_fp8x2 over 8 bytes (4 bf16x2, lowest first).
__device__ __forceinline__ uint4 mg_fp8x8(uint2 q, float sc) {
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; j++) w[j] = mg_fp8x2((unsigned short)(((j < 2 ? q.x : q.y) >> (16 * (j & 1))) & 0xffffu), sc);
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// mg_int4x2 widens the stored nibbles (q+8) in bits 0-3 and 16-19 of t
// (other bits ignored) with the bf16 scale s2 (in both halves) to a
// bf16x2 of (q−8)·scale, rounded once: nibble n becomes the bf16 128+n (n
// as the mantissa of 2^7), minus 136 exactly, times the scale in one bf16
// fma (the product is exact before its rounding, so this equals
// f32(q)·scale rounded to bf16, as int4_dequant).
__device__ __forceinline__ unsigned mg_int4x2(unsigned t, unsigned s2) {
    unsigned d, w;
    asm("lop3.b32 %0, %0, %1, %2, 0xea;\n" : "+r"(t) : "r"(0x000f000fu), "r"(0x43004300u));  // (t & m) | c
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(t), "r"(0x3f803f80u), "r"(0xc308c308u));  // t·1 − 136
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(w) : "r"(d), "r"(s2), "r"(0x80008000u));        // q·s − 0
    return w;
}
// mg_int4x8 is mg_int4x2 over packed word q (8 nibbles, lowest first):
// nibbles j and j+4 go through one bf16x2, then the halves are put back
// in column order.
__device__ __forceinline__ uint4 mg_int4x8(unsigned q, unsigned s2) {
    unsigned p[4];
#pragma unroll
    for (int j = 0; j < 4; j++) p[j] = mg_int4x2(q >> (4 * j), s2);
    return make_uint4(__byte_perm(p[0], p[1], 0x5410), __byte_perm(p[2], p[3], 0x5410),
                      __byte_perm(p[0], p[1], 0x7632), __byte_perm(p[2], p[3], 0x7632));
}

// mg_int4x8_f32 is mg_int4x8 for f32 scales: (q−8)·scale in f32, rounded
// once to bf16.
__device__ __forceinline__ uint4 mg_int4x8_f32(unsigned q, float sc) {
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float lo = (float)((int)((q >> (8 * j)) & 0xfu) - 8) * sc;
        float hi = (float)((int)((q >> (8 * j + 4)) & 0xfu) - 8) * sc;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(w[j]) : "f"(hi), "f"(lo));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ unsigned mg_pack(float lo, float hi) {
    return (unsigned)f32_to_bf16(lo) | ((unsigned)f32_to_bf16(hi) << 16);
}

// mg_units is the widening work of one thread of a grouped GEMM block: IT
// units of 8 consecutive k of one weight row each, local rows row0 +
// i·step of the block's weight tile (PR rows per part: the gate rows, then
// the same columns' up rows with GLU), all at the k offset ck of a k tile.
// Without TP, step divides PR and row0 < step, so a unit's part is fixed
// by i; with TP it depends on the thread's row0, and units at rows >=
// nrows (the tile's weight rows) are empty (scale offset −1: they widen to
// zeros and the caller stores nothing). Per unit the row's scale offset
// (−1 past N) is computed once, so a k tile costs one division.
// Quantization parameters as moe_gemm.cu's qa, qb, qc.
template <int WK, int IT, int PR, bool TP = false>
struct mg_units {
    int soff[IT];
    const unsigned char *sb0, *sb1;
    int row0, step, ck;

    __device__ __forceinline__ mg_units(int row0_, int step_, int ck_, int n0, int N, int qa, int qc,
                                        const unsigned char* wb0, const unsigned char* wb1, long long scale_off,
                                        int nrows = 0)
        : sb0(wb0 + scale_off), sb1(wb1 + scale_off), row0(row0_), step(step_), ck(ck_) {
#pragma unroll
        for (int i = 0; i < IT; i++) {
            const int wr = n0 + (row0 + i * step) % PR;
            soff[i] = wr >= N || (TP && row0 + i * step >= nrows) ? -1 : WK == MG_FP8 ? (wr / qa) * qc : wr * qc;
        }
    }

    // scales sets sc to the units' scales for k tile kt as raw bits: f32
    // for fp8 and (f32s) f32 int4 scales, bf16 in the low half for bf16
    // int4 scales; 0 past N or K. f32s is a constant at each call site.
    // (Unconditional loads of every unit, selected afterwards, measured no
    // faster in the wgmma kernels' int4 layers: y at 8192 tokens 20.8 ms,
    // against 17.6 and 19.9 in two runs of this form.)
    __device__ __forceinline__ void scales(int kt, int K, int qa, int qb, unsigned (&sc)[IT], bool f32s) const {
        const int k = kt * MG_BK + ck;
        const int kq = k / (WK == MG_FP8 ? qb : qa);
#pragma unroll
        for (int i = 0; i < IT; i++) {
            const unsigned char* sb = ((TP ? row0 : 0) + i * step) / PR ? sb1 : sb0;
            sc[i] = 0;
            if (soff[i] >= 0 && k < K) {
                if (WK == MG_FP8 || f32s) sc[i] = ((const unsigned*)sb)[soff[i] + kq];
                else sc[i] = ((const bf16_t*)sb)[soff[i] + kq];
            }
        }
    }

    // widen returns unit i of raw tile raw (rows of MG_BK fp8 bytes or
    // MG_BK/2 int4 bytes) as 8 bf16 with its scale sc (f32s: an int4 f32
    // scale; pass a constant, so each call site compiles one form). No
    // branch per unit: past N or K the raw bytes are zero-filled copies
    // and the scale is 0, so the unit widens to zeros (int4's (0−8)·0 is
    // −0, which adds nothing to a product).
    __device__ __forceinline__ uint4 widen(const unsigned char* raw, int i, unsigned sc, bool f32s) const {
        const int r = row0 + i * step;
        if (WK == MG_FP8) return mg_fp8x8(*(const uint2*)(raw + r * MG_BK + ck), __uint_as_float(sc));
        const unsigned q = *(const unsigned*)(raw + r * (MG_BK / 2) + ck / 2);
        return f32s ? mg_int4x8_f32(q, __uint_as_float(sc)) : mg_int4x8(q, sc | (sc << 16));
    }
};
