// common.cuh: element loads/stores and reductions shared by every hsdb
// kernel module. Included by each kernels/*.cu; its bytes are part of every
// module's source hash (scripts/build-kernels.sh, kernels/kernels.go).
//
// Storage types are raw bit patterns so no CUDA header is needed:
//   f32  float
//   bf16 unsigned short (top half of a binary32, torch.bfloat16)
//   f16  unsigned short (IEEE binary16, torch.float16)
//   fp8  unsigned char  (float8_e4m3fn, OCP FP8)
// Every kernel computes in f32 and rounds once when it stores, with
// round-to-nearest-even, as PyTorch's casts and engine/tensor do.
#pragma once

typedef unsigned short bf16_t;
typedef unsigned short f16_t;
typedef unsigned char fp8_t;

__device__ __forceinline__ float bf16_to_f32(bf16_t b) {
    return __uint_as_float(((unsigned)b) << 16);
}

// Round to nearest even; NaN stays a quiet NaN with its sign (as
// tensor.F32ToBF16).
__device__ __forceinline__ bf16_t f32_to_bf16(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16_t)((u >> 16) | 0x0040u);
    unsigned rounding = 0x7fffu + ((u >> 16) & 1u);
    return (bf16_t)((u + rounding) >> 16);
}

__device__ __forceinline__ float f16_to_f32(f16_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ f16_t f32_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

// float8_e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; S.1111.111 is
// NaN; no infinities. Exact widening.
__device__ __forceinline__ float fp8e4m3_to_f32(fp8_t b) {
    unsigned sign = ((unsigned)b & 0x80u) << 24;
    unsigned exp = ((unsigned)b >> 3) & 0xfu;
    unsigned man = (unsigned)b & 0x7u;
    if (exp == 0xfu && man == 0x7u) return __uint_as_float(sign | 0x7fc00000u);
    if (exp == 0) {  // subnormal: man/8 * 2^-6 = man * 2^-9, exact in f32
        float v = (float)man * 0.001953125f;
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((exp + 120u) << 23) | (man << 20));
}

// Element type traits: T is the storage type, load widens to f32, store
// rounds from f32.
template <typename T> struct elem;
template <> struct elem<float> {
    typedef float storage;
    static __device__ __forceinline__ float load(const float* p, long long i) { return p[i]; }
    static __device__ __forceinline__ void store(float* p, long long i, float v) { p[i] = v; }
};
struct bf16 {};
struct f16 {};
template <> struct elem<bf16> {
    typedef bf16_t storage;
    static __device__ __forceinline__ float load(const bf16_t* p, long long i) { return bf16_to_f32(p[i]); }
    static __device__ __forceinline__ void store(bf16_t* p, long long i, float v) { p[i] = f32_to_bf16(v); }
};
template <> struct elem<f16> {
    typedef f16_t storage;
    static __device__ __forceinline__ float load(const f16_t* p, long long i) { return f16_to_f32(p[i]); }
    static __device__ __forceinline__ void store(f16_t* p, long long i, float v) { p[i] = f32_to_f16(v); }
};

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// block_sum returns the sum of v over the block to every thread. blockDim.x
// must be a multiple of 32 and at most 1024; scratch holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // scratch may still be read from a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = lane < nwarps ? scratch[lane] : 0.f;
    return warp_sum(v);
}

// Instantiation helpers: DTYPES(M) expands M(name, T) for the three float
// storage types every activation kernel supports.
// GRID_STRIDE(i, n) loops i over [0, n) across the whole grid (64-bit).
#define GRID_STRIDE(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

template <typename T> using st = typename elem<T>::storage;

#define HSDB_DTYPES(M) M(f32, float) M(bf16, bf16) M(f16, f16)
