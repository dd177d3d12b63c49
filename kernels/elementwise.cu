// elementwise.cu: SiLU-and-mul, add, scale, over flat or strided rows.
// All compute in f32 and round once on store; out may alias an input.
#include "common.cuh"

// silu_mul: out[r, c] = silu(gate[r*gs + c]) * up[r*us + c] for c < cols,
// silu(g) = g / (1 + exp(-g)) (vLLM SiluAndMul; HF LlamaMLP act_fn(gate) * up
// without the intermediate rounding). With vLLM's merged gate_up [rows, 2*cols]
// pass gate = x, up = x + cols, gs = us = 2*cols. out is [rows, cols].
// One block row per gridDim.x stride, columns over blockDim.x.
template <typename T>
__device__ void silu_mul(st<T>* out, const st<T>* gate, const st<T>* up, long long rows, int cols,
                         long long gs, long long us) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            float g = elem<T>::load(gate, r * gs + c);
            float u = elem<T>::load(up, r * us + c);
            elem<T>::store(out, r * cols + c, g / (1.f + expf(-g)) * u);
        }
    }
}

// add: out[i] = a[i] + b[i] for i < n.
template <typename T>
__device__ void add(st<T>* out, const st<T>* a, const st<T>* b, long long n) {
    GRID_STRIDE(i, n) { elem<T>::store(out, i, elem<T>::load(a, i) + elem<T>::load(b, i)); }
}

// scale: out[i] = a[i] * s for i < n.
template <typename T>
__device__ void scale(st<T>* out, const st<T>* a, float s, long long n) {
    GRID_STRIDE(i, n) { elem<T>::store(out, i, elem<T>::load(a, i) * s); }
}

#define INST(name, T)                                                                                  \
    extern "C" __global__ void silu_mul_##name(st<T>* out, const st<T>* gate, const st<T>* up,         \
                                               long long rows, int cols, long long gs, long long us) { \
        silu_mul<T>(out, gate, up, rows, cols, gs, us);                                                \
    }                                                                                                  \
    extern "C" __global__ void add_##name(st<T>* out, const st<T>* a, const st<T>* b, long long n) {   \
        add<T>(out, a, b, n);                                                                          \
    }                                                                                                  \
    extern "C" __global__ void scale_##name(st<T>* out, const st<T>* a, float s, long long n) {        \
        scale<T>(out, a, s, n);                                                                        \
    }
HSDB_DTYPES(INST)
