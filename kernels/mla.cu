// mla.cu: the key and value write of DeepSeek's multi-head latent attention
// (DeepSeek-V2, arXiv:2405.04434 §2.1; HF DeepseekV3Attention builds the
// same keys with k_pe.expand and torch.cat((k_nope, k_pe)) before its cache
// update), fused into one pass over kv_b_proj's output.
//
// mla_kv_write_DT: for every token t with cache row r = rows[t] and head h
//   k_cache[r, h*(nope+rope) + j]        = kv[t, h*(nope+dv) + j]         j < nope
//   k_cache[r, h*(nope+rope) + nope + j] = k_pe[t, j]                     j < rope
//   v_cache[r, h*dv + j]                 = kv[t, h*(nope+dv) + nope + j]  j < dv
// kv [tokens, heads*(nope+dv)] is per head [k_nope | v]; k_pe [tokens, rope]
// is the rotated key part every head shares; k_cache [cache_rows,
// heads*(nope+rope)], v_cache [cache_rows, heads*dv]. Values are copied
// bit for bit. Rows outside the cache are skipped (the host validates and
// reports them first; the guard only keeps a bad launch from writing
// outside). One block per token; when every width and row start is a whole
// number of 16-byte chunks the copies move 16 bytes at a time.
#include "common.cuh"

// mla_move copies one token's keys and values in units of U (widths in U).
template <typename U>
__device__ __forceinline__ void mla_move(U* kd, U* vd, const U* src, const U* pe, int heads, int nope, int rope,
                                         int dv) {
    int dk = nope + rope, dkv = nope + dv, per = dk + dv;
    for (int i = threadIdx.x; i < heads * per; i += blockDim.x) {
        int h = i / per, c = i - h * per;
        if (c < nope) {
            kd[h * dk + c] = src[h * dkv + c];
        } else if (c < dk) {
            kd[h * dk + c] = pe[c - nope];
        } else {
            vd[h * dv + (c - dk)] = src[h * dkv + nope + (c - dk)];
        }
    }
}

template <typename T>
__device__ void mla_kv_write(st<T>* k_cache, st<T>* v_cache, const st<T>* kv, const st<T>* k_pe, const int* rows,
                             int heads, int nope, int rope, int dv, int cache_rows) {
    long long t = blockIdx.x;
    int r = rows[t];
    if (r < 0 || r >= cache_rows) return;
    st<T>* kd = k_cache + (long long)r * heads * (nope + rope);
    st<T>* vd = v_cache + (long long)r * heads * dv;
    const st<T>* src = kv + t * heads * (nope + dv);
    const st<T>* pe = k_pe + t * rope;
    const int V = 16 / (int)sizeof(st<T>);
    unsigned long long a = (unsigned long long)kd | (unsigned long long)vd | (unsigned long long)src |
                           (unsigned long long)pe;
    if (nope % V == 0 && rope % V == 0 && dv % V == 0 && (a & 15) == 0) {
        mla_move<uint4>((uint4*)kd, (uint4*)vd, (const uint4*)src, (const uint4*)pe, heads, nope / V, rope / V,
                        dv / V);
        return;
    }
    mla_move<st<T>>(kd, vd, src, pe, heads, nope, rope, dv);
}

#define INST(name, T)                                                                                        \
    extern "C" __global__ void mla_kv_write_##name(st<T>* k_cache, st<T>* v_cache, const st<T>* kv,            \
                                                   const st<T>* k_pe, const int* rows, int heads, int nope,   \
                                                   int rope, int dv, int cache_rows) {                       \
        mla_kv_write<T>(k_cache, v_cache, kv, k_pe, rows, heads, nope, rope, dv, cache_rows);                \
    }
HSDB_DTYPES(INST)
