// flash_attention.cu: fused causal prefill attention on the tensor cores
// (FlashAttention-2, Dao 2023: a tile of queries per block, a loop over key
// tiles with the online softmax of Milakov & Gimelshein 2018, the scores
// never written to memory) for bf16 and f16 activations, head dims 64 and
// 128, and q·k over 192 with values of 128 (DeepSeek's MLA: qk_nope 128 +
// qk_rope 64, v_head_dim 128), f32 accumulation and softmax.
//
// Layout (row-major; backend.AttnArgs, engine/backend/backend.go):
//   q   [tokens, q_ld]          query head h at columns [h*DK, (h+1)*DK)
//   k   [cache rows, k_ld]      kv head g at columns [g*DK, (g+1)*DK)
//   v   [cache rows, v_ld]      kv head g at columns [g*DV, (g+1)*DV)
//   out [tokens, o_ld]          head h at columns [h*DV, (h+1)*DV)
//   tiles [ntiles] int4 {t0, base, p0, n}: tokens t0..t0+n-1 (1 <= n <= 64)
//     of one sequence at the consecutive positions p0..p0+n-1, whose key j
//     is cache row base+j (the host builds them from AttnArgs' Base and Pos,
//     engine/backend/cuda/flash.go).
// Token t0+r (position p = p0+r) with query head h attends to the keys j of
// its sequence with lo(p) <= j <= p, lo(p) = max(0, p-window+1) with a
// sliding window (window > 0; Mistral's sliding_window, flash-attn's
// window_size=(window-1, 0)), else 0; kv head h/group (HF repeat_kv):
//   out[t, h] = Σ_j softmax_j(scale · q[t,h]·k[base+j, h/group]) · v[base+j, h/group]
// Scores and the softmax are f32; the probabilities are rounded once to the
// activation dtype for the P·V product (as FlashAttention-2 does); the
// output is rounded once, to nearest even.
//
// Why inline mma.sync and not nvcuda::wmma: the online softmax works on the
// score accumulators in registers and feeds them straight back as the A
// operand of P·V. mma.sync.m16n8k16 documents which lane holds which
// element of every fragment (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), and the accumulator layout of two n8 score tiles is
// exactly the A layout of one k16 step, so P never leaves the registers;
// wmma's fragment layout is opaque, so the scores would make a round trip
// through shared memory per key tile. (wgmma, Hopper's faster warpgroup
// MMA, needs sm_90a PTX, which this repository's nvcc 11.8 cannot emit.)
//
// Block: 4 warps (128 threads) for one (query tile, head); warp w owns the
// tile's rows 16w..16w+15. Keys stream through shared memory 64 at a time,
// double-buffered with cp.async: tile i+1 is copied while tile i computes.
//
// Fragment layouts used below (PTX ISA, mma.m16n8k16 with .bf16/.f16;
// g = lane/4, c = lane%4):
//   A (16x16, 4 regs of 2 halves): reg0 (row g,   cols 2c,2c+1)
//                                  reg1 (row g+8, cols 2c,2c+1)
//                                  reg2 (row g,   cols 2c+8,2c+9)
//                                  reg3 (row g+8, cols 2c+8,2c+9)
//   B (16x8, 2 regs):  reg0 (k 2c,2c+1, n g), reg1 (k 2c+8,2c+9, n g)
//   C/D (16x8 f32):    d0,d1 (row g, cols 2c,2c+1); d2,d3 (row g+8, same cols)
// The lower-index element of a pair is in the low 16 bits.
// ldmatrix.x4 loads four 8x8 b16 matrices; lanes 8i..8i+7 give the row
// addresses of matrix i, and register i of lane l receives matrix i's row
// l/4, columns 2(l%4), 2(l%4)+1 (with .trans: column l/4, rows 2(l%4),
// 2(l%4)+1, i.e. the transposed matrix).
#include "common.cuh"

#define FA_BM 64      // queries per block (16 per warp)
#define FA_BN 64      // keys per tile
#define FA_THREADS 128
// Blocks per multiprocessor the register allocation must allow: 3 blocks
// of 4 warps (12 warps) and 3 x 68 KiB of shared memory fit an H100/H200
// SM. ptxas (sm_90, -Xptxas -v) then uses 168 registers with an 8-word
// spill of prefetch addresses outside the MMA loops; with 2 it uses 229
// and spills nothing.
#define FA_MIN_BLOCKS 3
// DeepSeek's MLA (flash_attention_mla_DT: q·k over qk_nope+qk_rope = 192
// dims, values of v_head_dim = 128): 2 x 84 KiB of shared memory per SM.
#define FA_MLA_MIN_BLOCKS 2
#define NEG_INF __int_as_float(0xff800000)

// Operand traits: mma and packing of two f32 into a b16x2 register (low
// half = lo), rounding to nearest even.
template <typename T> struct fa_op;
template <> struct fa_op<bf16> {
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        unsigned r;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
        return r;
    }
    static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};
template <> struct fa_op<f16> {
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        unsigned r;
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
        return r;
    }
    static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16-byte global→shared copy; with valid false the 16 bytes are zeroed
// and nothing is read (src-size 0), src need not be dereferenceable.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

// 2^x, approximate (ex2.approx: relative error about 2^-22, subnormal
// results flushed to zero); exp2(-inf) = 0, NaN stays NaN.
__device__ __forceinline__ float fa_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// fa_load_rows copies rows row0..row0+63 (D elements each, 16-byte chunks)
// of src (row stride ld elements) into dst [64][D+8]; rows > last are
// zero-filled and not read. 128 threads: chunk c = tid + 128i is row c/(D/8),
// elements 8(c%(D/8))..+7, so consecutive threads copy consecutive 16 bytes
// of one row (coalesced). Every source address is 16-byte aligned: the host
// checks that the base pointers are and that ld and the column offset are
// multiples of 8 elements (D is).
template <typename T, int D>
__device__ __forceinline__ void fa_load_rows(st<T>* dst, const st<T>* src, long long ld, int row0, int last) {
    constexpr int CH = D / 8, LD = D + 8;
#pragma unroll
    for (int i = 0; i < FA_BN * CH / FA_THREADS; i++) {
        int c = threadIdx.x + i * FA_THREADS;
        int r = c / CH, col = (c % CH) * 8;
        bool ok = row0 + r <= last;
        cp_async16(dst + r * LD + col, ok ? src + (long long)(row0 + r) * ld + col : src, ok);
    }
}

template <typename T, int DK, int DV>
__device__ __forceinline__ void flash_attention(st<T>* out, const st<T>* q, const st<T>* k, const st<T>* v,
                                                const int4* tiles, int heads, int group, long long q_ld,
                                                long long k_ld, long long v_ld, long long o_ld, int window,
                                                float scale_log2) {
    // Shared memory: K and V tiles [2 stages][64 keys][D+8]. The 8-element
    // pad makes the row stride (D+8)*2 bytes = 16 mod 128, so the 8 rows an
    // ldmatrix phase reads fall in 8 different 16-byte bank groups (no
    // conflicts) and every row start stays 16-byte aligned for cp.async.
    // The query tile [64][D+8] borrows K's stage 1 before the loop.
    // K rows hold DK elements (the q·k width), V rows DV (MLA: 192, 128).
    constexpr int LD = DK + 8, TILE = FA_BN * LD, LDV = DV + 8, TILEV = FA_BN * LDV;
    extern __shared__ __align__(16) unsigned char fa_smem[];
    st<T>* Ks = (st<T>*)fa_smem;  // [2][FA_BN][LD]
    st<T>* Vs = Ks + 2 * TILE;    // [2][FA_BN][LDV]
    st<T>* Qs = Ks + TILE;        // [FA_BM][LD], prologue only

    // Block b is head b % heads of tile b / heads: the host orders the
    // tiles longest first, so the heaviest (tile, head) pairs start first,
    // and the heads sharing a kv head run side by side (L2 reuse).
    const int h = blockIdx.x % heads;
    const int4 tile = tiles[blockIdx.x / heads];
    const int t0 = tile.x, base = tile.y, p0 = tile.z, n = tile.w;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, c = lane & 3;

    // Keys of the tile: kstart = lo(p0) (the smallest lower bound, of the
    // first row) to kend = p0+n-1 (the last row's position). Every key in
    // between is a position of this sequence at or before the tile's last
    // token, so the caller has written its cache row, and row base+kend is
    // inside the cache (the host checked base+pos < rows for every token).
    const int kstart = window > 0 ? max(0, p0 - window + 1) : 0;
    const int kend = p0 + n - 1;
    const int ntiles = (kend - kstart) / FA_BN + 1;

    const st<T>* qg = q + (long long)t0 * q_ld + (long long)h * DK;
    const st<T>* kg = k + (long long)base * k_ld + (long long)(h / group) * DK;  // key j: kg + j*k_ld
    const st<T>* vg = v + (long long)base * v_ld + (long long)(h / group) * DV;  // value j: vg + j*v_ld

    // Prologue: Q (rows >= n zero-filled) and key tile 0, then Q into
    // registers as A fragments: qf[kk] is rows 16w..16w+15, dims 16kk..16kk+15.
    // ldmatrix lane l addresses row l%16, column 8(l/16) of that block, so
    // matrices 0..3 are (rows 0-7, cols 0-7), (rows 8-15, cols 0-7),
    // (rows 0-7, cols 8-15), (rows 8-15, cols 8-15) = A regs 0..3.
    fa_load_rows<T, DK>(Qs, qg, q_ld, 0, n - 1);
    fa_load_rows<T, DK>(Ks, kg, k_ld, kstart, kend);
    fa_load_rows<T, DV>(Vs, vg, v_ld, kstart, kend);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();
    unsigned qf[DK / 16][4];
#pragma unroll
    for (int kk = 0; kk < DK / 16; kk++) ldsm_x4(qf[kk], Qs + (warp * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8);
    __syncthreads();  // Qs (K stage 1) is free before the loop's first prefetch writes it

    // This thread's two rows (of the C layout): tile rows 16w+g and
    // 16w+g+8 at positions pr[0], pr[1] with lower bounds lo[0], lo[1].
    // Rows >= n are padding: computed, never stored.
    int pr[2], lo[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        pr[i] = p0 + warp * 16 + g + 8 * i;
        lo[i] = window > 0 ? max(0, pr[i] - window + 1) : 0;
    }
    // Online softmax state per row (log2 domain): m = running max of
    // scale_log2·q·k, l = this thread's share of Σ 2^(s-m) (its 16 columns
    // of every tile; the quad's four shares are added at the end: all four
    // rescale by the same alpha since m is quad-uniform), o = unnormalised
    // output, o[dn] = dims 8dn+2c, 8dn+2c+1 of both rows (C layout).
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.f, 0.f};
    float o[DV / 8][4];
#pragma unroll
    for (int dn = 0; dn < DV / 8; dn++) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.f;

    // A warp needs the element mask only on tiles that cross its rows'
    // causal diagonal or window edge. Its rows' positions are
    // pmin = p0+16w .. p0+16w+15. Without masking every key j0..j0+63 must
    // satisfy j <= pmin (the largest key is j0+63) and j >= lo(pmin+15) (the
    // smallest key is j0). Keys past kend (zero-filled) are > kend >= pmin
    // whenever the warp has a real row (16w <= n-1), so they always take
    // the masked path; a warp of padding rows only computes garbage rows.
    const int pmin = p0 + warp * 16;

    for (int it = 0; it < ntiles; it++) {
        const int buf = it & 1;
        const int j0 = kstart + it * FA_BN;  // key of tile row 0
        // Prefetch tile it+1 into the other stage. Safe: every warp passed
        // the barrier at the end of iteration it-1, after its last read of
        // that stage (tile it-1), and before any thread gets here.
        if (it + 1 < ntiles) {
            fa_load_rows<T, DK>(Ks + (buf ^ 1) * TILE, kg, k_ld, j0 + FA_BN, kend);
            fa_load_rows<T, DV>(Vs + (buf ^ 1) * TILEV, vg, v_ld, j0 + FA_BN, kend);
        }
        cp_async_commit();
        const st<T>* Kb = Ks + buf * TILE;
        const st<T>* Vb = Vs + buf * TILEV;

        // S = Q·Kᵀ: s[nt] is keys j0+8nt..j0+8nt+7 (C layout: s[nt][0..1]
        // row g keys j0+8nt+2c+{0,1}, s[nt][2..3] row g+8). B[k=dim][n=key]
        // = K[key][dim]: K rows (keys) are contiguous in dims, so plain
        // ldmatrix gives lane l key l/4 and dims 2(l%4)+{0,1} = the B layout.
        // Lane l addresses key 16nn + (l%8) + 8(l/16), dim 16kk + 8((l/8)%2):
        // matrices 0..3 = (keys 0-7, dims 0-7), (keys 0-7, dims 8-15),
        // (keys 8-15, dims 0-7), (keys 8-15, dims 8-15) = B regs 0,1 of
        // n-tile 2nn, then B regs 0,1 of n-tile 2nn+1.
        float s[FA_BN / 8][4];
#pragma unroll
        for (int nt = 0; nt < FA_BN / 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < DK / 16; kk++) {
#pragma unroll
            for (int nn = 0; nn < FA_BN / 16; nn++) {
                unsigned b[4];
                ldsm_x4(b, Kb + (nn * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + kk * 16 + ((lane >> 3) & 1) * 8);
                fa_op<T>::mma(s[2 * nn], qf[kk], b[0], b[1]);
                fa_op<T>::mma(s[2 * nn + 1], qf[kk], b[2], b[3]);
            }
        }

        // Scale into the log2 domain and mask: element e of s[nt] is row
        // e/2 (g or g+8), key j0+8nt+2c+(e%2); allowed iff lo <= key <= pos.
        const bool need_mask = j0 + FA_BN - 1 > pmin || (window > 0 && j0 < pmin + 15 - window + 1);
#pragma unroll
        for (int nt = 0; nt < FA_BN / 8; nt++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float x = s[nt][e] * scale_log2;
                if (need_mask) {
                    int j = j0 + nt * 8 + 2 * c + (e & 1);
                    if (j > pr[e >> 1] || j < lo[e >> 1]) x = NEG_INF;
                }
                s[nt][e] = x;
            }
        }

        // Online softmax. New max over the quad (the 4 lanes g*4..g*4+3 hold
        // the row's 64 keys); msub is the max used for the exponent, 0 when
        // every key so far is masked (m = -inf) so that no -inf - -inf NaN
        // arises: then p = 2^(-inf) = 0 and alpha = 2^(-inf - 0) = 0 (o and l
        // are still 0). Otherwise alpha = 2^(m_old - m_new) <= 1 rescales
        // the old o and l (m_old = -inf gives 0). Only a padding row can be
        // all masked: a real row r (position p0+r) may use key lo(p0+r),
        // and kstart <= lo(p0+r) <= kstart + r <= kstart + 63 puts it in
        // tile 0, so its m is finite from the first tile on.
        float alpha[2], msub[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            float mx = m[i];
#pragma unroll
            for (int nt = 0; nt < FA_BN / 8; nt++) mx = fmaxf(mx, fmaxf(s[nt][2 * i], s[nt][2 * i + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            msub[i] = mx == NEG_INF ? 0.f : mx;
            alpha[i] = fa_exp2(m[i] - msub[i]);
            m[i] = mx;
        }
        float rs[2] = {0.f, 0.f};
#pragma unroll
        for (int nt = 0; nt < FA_BN / 8; nt++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[nt][e] = fa_exp2(s[nt][e] - msub[e >> 1]);
                rs[e >> 1] += s[nt][e];
            }
        }
#pragma unroll
        for (int i = 0; i < 2; i++) l[i] = l[i] * alpha[i] + rs[i];
#pragma unroll
        for (int dn = 0; dn < DV / 8; dn++) {
            o[dn][0] *= alpha[0];
            o[dn][1] *= alpha[0];
            o[dn][2] *= alpha[1];
            o[dn][3] *= alpha[1];
        }

        // O += P·V. P's k16 step kk (keys 16kk..16kk+15 of the tile) as an A
        // fragment is exactly the C fragments of n-tiles 2kk and 2kk+1:
        // reg0 = row g keys 2c,2c+1 = s[2kk][0..1], reg1 = row g+8 =
        // s[2kk][2..3], reg2 = row g keys 8+2c.. = s[2kk+1][0..1], reg3 =
        // s[2kk+1][2..3]. B[k=key][n=dim] = V[key][dim]: V rows are keys, so
        // ldmatrix.trans gives lane l dim l/4 and keys 2(l%4)+{0,1} = the B
        // layout. Lane l addresses key 16kk + (l%8) + 8((l/8)%2), dim
        // 16dn + 8(l/16): matrices 0..3 = (keys 0-7, dims 0-7), (keys 8-15,
        // dims 0-7), (keys 0-7, dims 8-15), (keys 8-15, dims 8-15) = B regs
        // 0,1 of n-tile 2dn, then of n-tile 2dn+1. Zero-filled keys past
        // kend have p = 0 and v = 0, so they add exactly 0.
#pragma unroll
        for (int kk = 0; kk < FA_BN / 16; kk++) {
            unsigned pa[4];
            pa[0] = fa_op<T>::pack(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = fa_op<T>::pack(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = fa_op<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = fa_op<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int dn = 0; dn < DV / 16; dn++) {
                unsigned b[4];
                ldsm_x4_trans(b, Vb + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDV + dn * 16 + (lane >> 4) * 8);
                fa_op<T>::mma(o[2 * dn], pa, b[0], b[1]);
                fa_op<T>::mma(o[2 * dn + 1], pa, b[2], b[3]);
            }
        }

        // Tile it+1 has landed (this thread's copies) and is visible to all
        // (barrier); every warp is done with stage buf before it is refilled.
        cp_async_wait_all();
        __syncthreads();
    }

    // Normalise and store rows < n. A real row always has its own key
    // (lo(p) <= p), whose p = 2^(s - m) > 0 unless s is NaN, so l > 0;
    // l == 0 (a padding row) stores nothing anyway. o[dn][0..1] are dims
    // 8dn+2c, +1 of row 16w+g: one 4-byte store of two elements.
#pragma unroll
    for (int i = 0; i < 2; i++) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    }
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int r = warp * 16 + g + 8 * i;
        if (r >= n) continue;
        const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
        unsigned* orow = (unsigned*)(out + (long long)(t0 + r) * o_ld + (long long)h * DV);
#pragma unroll
        for (int dn = 0; dn < DV / 8; dn++) orow[dn * 4 + c] = fa_op<T>::pack(o[dn][2 * i] * inv, o[dn][2 * i + 1] * inv);
    }
}

// flash_attention_DT: grid ntiles*heads blocks of 128 threads, dynamic
// shared memory 4*64*(head_dim+8)*2 bytes; head_dim 64 or 128 for q, k and
// v (the host refuses others). flash_attention_mla_DT: q and k 192 wide, v
// and out 128 (DeepSeek's MLA), shared memory 2*64*(200+136)*2 bytes.
// scale_log2 = scale·log2(e) (the softmax runs in base 2); k_ld and v_ld
// are the caches' row strides.
template <typename T>
__device__ __forceinline__ void flash_attention_dispatch(st<T>* out, const st<T>* q, const st<T>* k, const st<T>* v,
                                                         const int4* tiles, int heads, int group, int head_dim,
                                                         long long q_ld, long long k_ld, long long v_ld,
                                                         long long o_ld, int window, float scale_log2) {
    if (head_dim == 128)
        flash_attention<T, 128, 128>(out, q, k, v, tiles, heads, group, q_ld, k_ld, v_ld, o_ld, window, scale_log2);
    else
        flash_attention<T, 64, 64>(out, q, k, v, tiles, heads, group, q_ld, k_ld, v_ld, o_ld, window, scale_log2);
}

#define FA_ENTRY(name, T)                                                                                         \
    extern "C" __launch_bounds__(FA_THREADS, FA_MIN_BLOCKS) __global__ void flash_attention_##name(             \
        st<T>* out, const st<T>* q, const st<T>* k, const st<T>* v, const int4* tiles, int heads, int group,    \
        int head_dim, long long q_ld, long long k_ld, long long v_ld, long long o_ld, int window,                \
        float scale_log2) {                                                                                      \
        flash_attention_dispatch<T>(out, q, k, v, tiles, heads, group, head_dim, q_ld, k_ld, v_ld, o_ld, window, \
                                    scale_log2);                                                                 \
    }                                                                                                            \
    extern "C" __launch_bounds__(FA_THREADS, FA_MLA_MIN_BLOCKS) __global__ void flash_attention_mla_##name(     \
        st<T>* out, const st<T>* q, const st<T>* k, const st<T>* v, const int4* tiles, int heads, int group,    \
        long long q_ld, long long k_ld, long long v_ld, long long o_ld, int window, float scale_log2) {         \
        flash_attention<T, 192, 128>(out, q, k, v, tiles, heads, group, q_ld, k_ld, v_ld, o_ld, window,         \
                                     scale_log2);                                                                \
    }
FA_ENTRY(bf16, bf16)
FA_ENTRY(f16, f16)
