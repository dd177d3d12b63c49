// rope.cu: rotary position embedding (Su et al. 2021, RoFormer) applied in
// place to x [tokens, row_stride], where head h of token t starts at
// t*row_stride + h*head_stride and its rotary part is the rot_dim elements
// from rot_offset (rot_offset = 0, rot_dim = head_dim for Llama; DeepSeek
// MLA's q has head_stride 192, rot_offset 128, rot_dim 64).
//
// For pair i < rot_dim/2 of a head at position p, with f = p * inv_freq[i]
// (f32, as HF computes freqs) and c = cos(f)*mscale, s = sin(f)*mscale:
//   (a, b) <- (a*c - b*s, b*c + a*s)
// where (a, b) is
//   halves (interleaved = 0): elements (i, i + rot_dim/2), HF rotate_half and
//     vLLM is_neox_style=True (Llama, Qwen, Mistral);
//   interleaved (interleaved = 1): elements (2i, 2i+1), GPT-J, llama2.c,
//     vLLM is_neox_style=False (DeepSeek-V2/V3 MLA).
// mscale is YaRN's attention scaling (Peng et al. 2023; HF
// attention_scaling, vLLM DeepseekScalingRotaryEmbedding's mscale); 1 for
// plain RoPE. inv_freq [rot_dim/2] f32 holds the (possibly YaRN- or
// llama3-scaled) inverse frequencies; positions [tokens] int32.
#include "common.cuh"

template <typename T>
__device__ void rope(st<T>* x, const int* positions, const float* inv_freq, long long tokens, int heads,
                     long long row_stride, int head_stride, int rot_offset, int rot_dim, int interleaved,
                     float mscale) {
    int half = rot_dim / 2;
    GRID_STRIDE(i, tokens * heads * half) {
        long long t = i / ((long long)heads * half);
        int rem = (int)(i % ((long long)heads * half));
        int h = rem / half, j = rem % half;
        long long o = t * row_stride + (long long)h * head_stride + rot_offset;
        long long ia = interleaved ? o + 2 * j : o + j;
        long long ib = interleaved ? ia + 1 : ia + half;
        float f = (float)positions[t] * inv_freq[j];
        float s, c;
        sincosf(f, &s, &c);
        c *= mscale;
        s *= mscale;
        float a = elem<T>::load(x, ia), b = elem<T>::load(x, ib);
        elem<T>::store(x, ia, a * c - b * s);
        elem<T>::store(x, ib, b * c + a * s);
    }
}

// rope_tok is rope with one block per token (grid-stride over tokens):
// the token's cos and sin, scaled, are computed once into shared memory
// (rot_dim floats, dynamic) and shared by its heads, instead of one
// sincosf per head and pair (DeepSeek-V3's q has 128 heads over the same
// 32 angles). Same f, sincosf and products as rope, so the same bits.
template <typename T>
__device__ void rope_tok(st<T>* x, const int* positions, const float* inv_freq, long long tokens, int heads,
                         long long row_stride, int head_stride, int rot_offset, int rot_dim, int interleaved,
                         float mscale) {
    extern __shared__ float rope_cs[];  // [half] c, then [half] s
    const int half = rot_dim / 2, n = heads * half;
    for (long long t = blockIdx.x; t < tokens; t += gridDim.x) {
        __syncthreads();  // the previous token's readers are done
        const float p = (float)positions[t];
        for (int j = threadIdx.x; j < half; j += blockDim.x) {
            float f = p * inv_freq[j];
            float s, c;
            sincosf(f, &s, &c);
            rope_cs[j] = c * mscale;
            rope_cs[half + j] = s * mscale;
        }
        __syncthreads();
        st<T>* xt = x + t * row_stride + rot_offset;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const int h = i / half, j = i - h * half;
            const long long ia = (long long)h * head_stride + (interleaved ? 2 * j : j);
            const long long ib = interleaved ? ia + 1 : ia + half;
            const float c = rope_cs[j], s = rope_cs[half + j];
            float a = elem<T>::load(xt, ia), b = elem<T>::load(xt, ib);
            elem<T>::store(xt, ia, a * c - b * s);
            elem<T>::store(xt, ib, b * c + a * s);
        }
    }
}

// INST_K(kernel, name, T) instantiates kernel<T> as extern "C" kernel_name.
#define INST_K(kernel, name, T)                                                                       \
    extern "C" __global__ void kernel##_##name(st<T>* x, const int* positions, const float* inv_freq, \
                                               long long tokens, int heads, long long row_stride,     \
                                               int head_stride, int rot_offset, int rot_dim,          \
                                               int interleaved, float mscale) {                       \
        kernel<T>(x, positions, inv_freq, tokens, heads, row_stride, head_stride, rot_offset, rot_dim, \
                  interleaved, mscale);                                                               \
    }
#define INST(name, T) INST_K(rope, name, T) INST_K(rope_tok, name, T)
HSDB_DTYPES(INST)
