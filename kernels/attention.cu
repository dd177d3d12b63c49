// attention.cu: causal attention over a varlen flattened token batch with a
// paged-by-slot KV cache, and the KV-cache write.
//
// Layout (all row-major):
//   q       [tokens, q_ld]                 head h at columns [h*dk, (h+1)*dk)
//   k_cache [slots, capacity, kv_heads*dk] key of (slot, position)
//   v_cache [slots, capacity, kv_heads*dv]
//   out     [tokens, o_ld]                 head h at columns [h*dv, (h+1)*dv)
//   slot, pos [tokens] int32: token t's sequence slot and its position
// Token t, query head h attends to keys j of its slot with lo <= j <= pos[t],
// lo = max(0, pos[t]-window+1) when window > 0 (a sliding window of window
// keys including its own, as Mistral's sliding_window and flash-attention's
// window_size=(window-1, 0)), else 0. GQA: kv head = h / (heads/kv_heads)
// (HF repeat_kv). dk may differ from dv (DeepSeek MLA: 192 and 128).
// Scores are (q·k)*scale in f32, softmax with the running maximum (online
// softmax, Milakov & Gimelshein 2018; FlashAttention, Dao et al. 2022),
// the output rounded once. Masked keys contribute exactly nothing, so a NaN
// in the cache outside a token's window never reaches it.
#include "common.cuh"

#define NEG_INF __int_as_float(0xff800000)

// kv_cache_write_DT: cache[slot[t], pos[t], :] = src[t*src_ld : t*src_ld+width]
// for every token t; cache is [slots, capacity, width]. Tokens whose slot or
// position is out of range are skipped (the host validates and reports them
// first; the guard only keeps a bad launch from writing outside the cache).
// One block per token.
template <typename T>
__device__ void kv_cache_write(st<T>* cache, const st<T>* src, const int* slot, const int* pos, int width,
                               long long src_ld, int slots, int capacity) {
    long long t = blockIdx.x;
    int s = slot[t], p = pos[t];
    if (s < 0 || s >= slots || p < 0 || p >= capacity) return;
    st<T>* dst = cache + ((long long)s * capacity + p) * width;
    const st<T>* row = src + t * src_ld;
    // Rows of whole, aligned 16-byte chunks move as uint4.
    const int bytes = width * (int)sizeof(st<T>);
    if ((bytes & 15) == 0 && (((unsigned long long)row | (unsigned long long)dst) & 15) == 0) {
        const uint4* s4 = (const uint4*)row;
        uint4* d4 = (uint4*)dst;
        for (int c = threadIdx.x; c < bytes / 16; c += blockDim.x) d4[c] = s4[c];
        return;
    }
    for (int c = threadIdx.x; c < width; c += blockDim.x) dst[c] = row[c];
}

// Prefill: one block of 128 threads per (query tile, head). A query tile is
// up to BM consecutive tokens of one slot (tiles[b] = {first token, count},
// built by the host); keys stream through shared memory BN at a time.
#define BM 16
#define BN 32

template <typename T>
__device__ void attention_prefill(st<T>* out, const st<T>* q, const st<T>* k_cache, const st<T>* v_cache,
                                  const int* slot, const int* pos, const int2* tiles, int heads, int kv_heads,
                                  int dk, int dv, long long q_ld, long long o_ld, int capacity, int window,
                                  float scale) {
    extern __shared__ float sm[];
    float* Qs = sm;                    // [BM][dk]
    float* Ks = Qs + BM * dk;          // [BN][dk+1]
    float* Vs = Ks + BN * (dk + 1);    // [BN][dv]
    float* Ps = Vs + BN * dv;          // [BM][BN]
    float* Os = Ps + BM * BN;          // [BM][dv]
    float* rm = Os + BM * dv;          // [BM] running max
    float* rl = rm + BM;               // [BM] running sum
    float* ra = rl + BM;               // [BM] rescale factor of this step
    int* rlo = (int*)(ra + BM);        // [BM] first key
    int* rhi = rlo + BM;               // [BM] last key (its position), -1 for padding rows

    int2 tile = tiles[blockIdx.x];
    int t0 = tile.x, nq = tile.y, h = blockIdx.y;
    int kvh = h / (heads / kv_heads);
    int s = slot[t0];
    int tid = threadIdx.x, nt = blockDim.x;

    for (int r = tid; r < BM; r += nt) {
        int hi = -1, lo = 0;
        if (r < nq) {
            hi = pos[t0 + r];
            lo = window > 0 ? max(0, hi - window + 1) : 0;
        }
        rhi[r] = hi;
        rlo[r] = lo;
        rm[r] = NEG_INF;
        rl[r] = 0.f;
    }
    for (int i = tid; i < BM * dk; i += nt) {
        int r = i / dk, d = i % dk;
        Qs[i] = r < nq ? elem<T>::load(q, (long long)(t0 + r) * q_ld + (long long)h * dk + d) : 0.f;
    }
    for (int i = tid; i < BM * dv; i += nt) Os[i] = 0.f;
    __syncthreads();

    int kmin = 0x7fffffff, kmax = -1;
    for (int r = 0; r < nq; r++) {
        kmin = min(kmin, rlo[r]);
        kmax = max(kmax, rhi[r]);
    }
    long long kld = (long long)kv_heads * dk, vld = (long long)kv_heads * dv;
    const st<T>* kb = k_cache + (long long)s * capacity * kld + (long long)kvh * dk;
    const st<T>* vb = v_cache + (long long)s * capacity * vld + (long long)kvh * dv;
    int lane = tid & 31, warp = tid >> 5, nwarps = nt >> 5;

    for (int j0 = kmin; j0 <= kmax; j0 += BN) {
        for (int i = tid; i < BN * dk; i += nt) {
            int j = i / dk, d = i % dk, key = j0 + j;
            Ks[j * (dk + 1) + d] = key <= kmax ? elem<T>::load(kb, (long long)key * kld + d) : 0.f;
        }
        for (int i = tid; i < BN * dv; i += nt) {
            int j = i / dv, d = i % dv, key = j0 + j;
            Vs[i] = key <= kmax ? elem<T>::load(vb, (long long)key * vld + d) : 0.f;
        }
        __syncthreads();
        for (int i = tid; i < BM * BN; i += nt) {
            int r = i / BN, j = i % BN, key = j0 + j;
            float sc = NEG_INF;
            if (key >= rlo[r] && key <= rhi[r]) {
                const float* qr = Qs + r * dk;
                const float* kr = Ks + j * (dk + 1);
                float acc = 0.f;
                for (int d = 0; d < dk; d++) acc = fmaf(qr[d], kr[d], acc);
                sc = acc * scale;
            }
            Ps[i] = sc;
        }
        __syncthreads();
        for (int r = warp; r < BM; r += nwarps) {  // BN == 32: one lane per key
            float sc = Ps[r * BN + lane];
            float mold = rm[r];
            float mnew = fmaxf(mold, warp_max(sc));
            float p = sc == NEG_INF ? 0.f : expf(sc - mnew);
            float alpha = mold == NEG_INF ? 0.f : expf(mold - mnew);
            float ps = warp_sum(p);
            Ps[r * BN + lane] = p;
            __syncwarp();
            if (lane == 0) {
                rl[r] = rl[r] * alpha + ps;
                rm[r] = mnew;
                ra[r] = alpha;
            }
        }
        __syncthreads();
        for (int i = tid; i < BM * dv; i += nt) {
            int r = i / dv, c = i % dv;
            float acc = Os[i] * ra[r];
            int jlo = max(rlo[r] - j0, 0), jhi = min(rhi[r] - j0, BN - 1);
            for (int j = jlo; j <= jhi; j++) acc = fmaf(Ps[r * BN + j], Vs[j * dv + c], acc);
            Os[i] = acc;
        }
        __syncthreads();
    }
    for (int i = tid; i < nq * dv; i += nt) {
        int r = i / dv, c = i % dv;
        float l = rl[r];
        elem<T>::store(out, (long long)(t0 + r) * o_ld + (long long)h * dv + c, l > 0.f ? Os[i] / l : 0.f);
    }
}

// Decode (and any token on its own): one block of DEC_WARPS warps per
// (token, head). Each warp walks every DEC_WARPS-th key with its own online
// softmax state, lanes splitting the head dims; the warps' states are merged
// at the end. dk, dv <= 32*DEC_MAXV.
#define DEC_WARPS 4
#define DEC_MAXV 8

template <typename T>
__device__ void attention_decode(st<T>* out, const st<T>* q, const st<T>* k_cache, const st<T>* v_cache,
                                 const int* slot, const int* pos, int heads, int kv_heads, int dk, int dv,
                                 long long q_ld, long long o_ld, int capacity, int window, float scale) {
    __shared__ float qs[32 * DEC_MAXV];
    __shared__ float wm[DEC_WARPS], wl[DEC_WARPS];
    __shared__ float wo[DEC_WARPS][32 * DEC_MAXV];
    long long t = blockIdx.x;
    int h = blockIdx.y, kvh = h / (heads / kv_heads);
    int s = slot[t], hi = pos[t];
    int lo = window > 0 ? max(0, hi - window + 1) : 0;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int d = threadIdx.x; d < dk; d += blockDim.x) qs[d] = elem<T>::load(q, t * q_ld + (long long)h * dk + d);
    __syncthreads();

    long long kld = (long long)kv_heads * dk, vld = (long long)kv_heads * dv;
    const st<T>* kb = k_cache + (long long)s * capacity * kld + (long long)kvh * dk;
    const st<T>* vb = v_cache + (long long)s * capacity * vld + (long long)kvh * dv;
    float m = NEG_INF, l = 0.f, o[DEC_MAXV];
    for (int i = 0; i < DEC_MAXV; i++) o[i] = 0.f;
    for (int j = lo + warp; j <= hi; j += DEC_WARPS) {
        const st<T>* kr = kb + (long long)j * kld;
        float acc = 0.f;
        for (int d = lane; d < dk; d += 32) acc = fmaf(qs[d], elem<T>::load(kr, d), acc);
        float sc = warp_sum(acc) * scale;
        float mnew = fmaxf(m, sc);
        float alpha = m == NEG_INF ? 0.f : expf(m - mnew);
        float p = expf(sc - mnew);
        l = l * alpha + p;
        m = mnew;
        const st<T>* vr = vb + (long long)j * vld;
#pragma unroll
        for (int i = 0; i < DEC_MAXV; i++) {
            int c = lane + 32 * i;
            if (c < dv) o[i] = fmaf(p, elem<T>::load(vr, c), o[i] * alpha);
        }
    }
    if (lane == 0) {
        wm[warp] = m;
        wl[warp] = l;
    }
#pragma unroll
    for (int i = 0; i < DEC_MAXV; i++) wo[warp][lane + 32 * i] = o[i];
    __syncthreads();
    float M = NEG_INF;
    for (int w = 0; w < DEC_WARPS; w++) M = fmaxf(M, wm[w]);
    float L = 0.f, f[DEC_WARPS];
    for (int w = 0; w < DEC_WARPS; w++) {
        f[w] = wm[w] == NEG_INF ? 0.f : expf(wm[w] - M);
        L += wl[w] * f[w];
    }
    for (int c = threadIdx.x; c < dv; c += blockDim.x) {
        float acc = 0.f;
        for (int w = 0; w < DEC_WARPS; w++) acc += wo[w][c] * f[w];
        elem<T>::store(out, t * o_ld + (long long)h * dv + c, L > 0.f ? acc / L : 0.f);
    }
}

#define INST(name, T)                                                                                       \
    extern "C" __global__ void kv_cache_write_##name(st<T>* cache, const st<T>* src, const int* slot,       \
                                                     const int* pos, int width, long long src_ld, int slots, \
                                                     int capacity) {                                        \
        kv_cache_write<T>(cache, src, slot, pos, width, src_ld, slots, capacity);                           \
    }                                                                                                       \
    extern "C" __global__ void attention_prefill_##name(                                                    \
        st<T>* out, const st<T>* q, const st<T>* k_cache, const st<T>* v_cache, const int* slot,            \
        const int* pos, const int2* tiles, int heads, int kv_heads, int dk, int dv, long long q_ld,         \
        long long o_ld, int capacity, int window, float scale) {                                            \
        attention_prefill<T>(out, q, k_cache, v_cache, slot, pos, tiles, heads, kv_heads, dk, dv, q_ld, o_ld, \
                             capacity, window, scale);                                                      \
    }                                                                                                       \
    extern "C" __global__ void attention_decode_##name(                                                     \
        st<T>* out, const st<T>* q, const st<T>* k_cache, const st<T>* v_cache, const int* slot,            \
        const int* pos, int heads, int kv_heads, int dk, int dv, long long q_ld, long long o_ld,            \
        int capacity, int window, float scale) {                                                            \
        attention_decode<T>(out, q, k_cache, v_cache, slot, pos, heads, kv_heads, dk, dv, q_ld, o_ld,       \
                            capacity, window, scale);                                                       \
    }
HSDB_DTYPES(INST)
