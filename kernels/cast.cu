// cast.cu: dtype conversions between f32, bf16 and f16 (round to nearest
// even, as PyTorch's .to(dtype)), and fp8_e4m3 dequantisation with 2-D block
// scales.
#include "common.cuh"

// cast_SRC_DST: out[i] = DST(in[i]) for i < n.
#define CAST(sn, S, dn, D)                                                                          \
    extern "C" __global__ void cast_##sn##_##dn(st<D>* out, const st<S>* in, long long n) {          \
        GRID_STRIDE(i, n) { elem<D>::store(out, i, elem<S>::load(in, i)); }                         \
    }
CAST(f32, float, bf16, bf16)
CAST(f32, float, f16, f16)
CAST(bf16, bf16, f32, float)
CAST(f16, f16, f32, float)
CAST(bf16, bf16, f16, f16)
CAST(f16, f16, bf16, bf16)

// fp8_dequant_DST: w is [rows, cols] float8_e4m3fn, scale_inv is
// [ceil(rows/br), ceil(cols/bc)] f32 (DeepSeek-V3's weight_scale_inv with
// weight_block_size [br, bc] = [128, 128]); out[r, c] = w[r, c] *
// scale_inv[r/br, c/bc], rounded once to DST (as DeepSeek-V3's
// inference/kernel.py weight_dequant).
#define DEQUANT(dn, D)                                                                             \
    extern "C" __global__ void fp8_dequant_##dn(st<D>* out, const fp8_t* w, const float* scale_inv, \
                                                long long rows, long long cols, int br, int bc) {  \
        long long scols = (cols + bc - 1) / bc;                                                    \
        GRID_STRIDE(i, rows * cols) {                                                              \
            long long r = i / cols, c = i % cols;                                                  \
            float s = scale_inv[(r / br) * scols + c / bc];                                        \
            elem<D>::store(out, i, fp8e4m3_to_f32(w[i]) * s);                                      \
        }                                                                                          \
    }
DEQUANT(f32, float)
DEQUANT(bf16, bf16)
