// elementwise.cu: SiLU-and-mul, add, scale, over flat or strided rows.
// All compute in f32 and round once on store; out may alias an input.
#include "common.cuh"

// silu_mul: out[r, c] = silu(gate[r*gs + c]) * up[r*us + c] for c < cols,
// silu(g) = g / (1 + exp(-g)) (vLLM SiluAndMul; HF LlamaMLP act_fn(gate) * up
// without the intermediate rounding). With vLLM's merged gate_up [rows, 2*cols]
// pass gate = x, up = x + cols, gs = us = 2*cols. out is [rows, cols].
// One block row per gridDim.x stride, columns over blockDim.x; 16 bytes at
// a time when the columns, strides and pointers allow it.
template <typename T>
union chunk16 {
    static const int N = 16 / sizeof(st<T>);
    uint4 u;
    st<T> e[N];
};

template <typename T>
__device__ void silu_mul(st<T>* out, const st<T>* gate, const st<T>* up, long long rows, int cols,
                         long long gs, long long us) {
    const int N = chunk16<T>::N;
    if (cols % N == 0 && gs % N == 0 && us % N == 0 &&
        (((unsigned long long)out | (unsigned long long)gate | (unsigned long long)up) & 15) == 0) {
        int n = cols / N;
        for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
            const uint4* g4 = (const uint4*)(gate + r * gs);
            const uint4* u4 = (const uint4*)(up + r * us);
            uint4* o4 = (uint4*)(out + r * cols);
            for (int c = threadIdx.x; c < n; c += blockDim.x) {
                chunk16<T> g, u, y;
                g.u = g4[c];
                u.u = u4[c];
#pragma unroll
                for (int j = 0; j < N; j++) {
                    float a = elem<T>::load(g.e, j);
                    elem<T>::store(y.e, j, a / (1.f + expf(-a)) * elem<T>::load(u.e, j));
                }
                o4[c] = y.u;
            }
        }
        return;
    }
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
