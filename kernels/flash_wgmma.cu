// flash_wgmma.cu: DeepSeek's multi-head latent attention at prefill (q·k
// over qk_nope + qk_rope = 192 dims, values of v_head_dim = 128, bf16) on
// Hopper's warpgroup MMAs (wgmma.mma_async, sm_90a): the same contract,
// tile array and arithmetic as flash_attention.cu's
// flash_attention_mla_bf16 (read that file's comment: FlashAttention-2's
// query tile per block and online softmax over key tiles of 64, scores
// and softmax in f32, the probabilities rounded once to bf16 for P·V, the
// output once), with the two products on wgmma instead of mma.sync and
// query tiles of up to 128 tokens, not 64 (engine/backend/cuda's
// FlashTiles with GPU.FlashTileRows; FlashAttention refuses others).
//
// Why: flash_attention.cu's mma.sync kernel ran DeepSeek-V3's prefill of
// 4 × 1024 tokens (128 heads) at 188 TFLOPS on an H200 (0.92 ms per layer,
// BenchmarkFlashAttentionMLAPrefill): each warp reads every key and value
// of the tile from shared memory with ldmatrix for its own 16 query rows,
// and each block of 64 queries streams its keys and values from L2. Here
// a warpgroup MMA reads its shared-memory operand once for 64 rows, and
// two warpgroups (128 queries) share every key and value tile: 268
// TFLOPS (0.64 ms). Measured on the way (same benchmark, one H200): one
// warpgroup of 64 queries per block, two blocks per multiprocessor, Q
// from shared memory: 226 TFLOPS; this kernel with FlashAttention-3's
// intra-warpgroup overlap (S of tile it+1 issued with P·V of tile it, the
// softmax of it+1 running under P·V; Shah et al. 2024) needed a second
// score fragment, spilled at 255 registers and ran at 203; key tiles of
// 128 (S as m64n128, two stages of 80 KiB) ran at 193. The two
// warpgroups in ping-pong (FlashAttention-3's inter-warpgroup schedule:
// warpgroup 1 issues each tile's S and P·V after warpgroup 0 has issued
// its own, so that one's softmax runs under the other's products), against
// the same kernel in lockstep, in one run: 0.629 and 0.624 ms against
// 0.645 and 0.642 (275 TFLOPS against 267). Nsight Compute then found
// the kernel at 248 registers a thread, its issue slots 44 % busy and 860
// instructions per warp and key tile; with Q read by descriptor instead
// of held in 48 registers of A fragments, and each exponent one fused
// s·scale − m instead of a scaling pass and a subtraction: 0.599 ms
// against 0.627 (287 TFLOPS against 274; two runs of each, one H200).
// Measured after it and not kept: four key/value stages with the O
// rescale skipped where no row of a warp has a new maximum, 0.607 and
// 0.606 ms (against 0.599); the row maxima as a tree of depth 4 and the
// row sums in four partial sums (shorter dependency chains, as the
// stalls on fixed-latency dependencies suggested), 0.602 and 0.603
// against 0.600 and 0.596 in the same run.
//
// build: sm_90a
// (as moe_wgmma.cu: scripts/build-kernels.sh marks the PTX sm_90a;
// engine/backend/cuda takes this kernel only on compute capability 9.0
// and keeps flash_attention.cu's elsewhere; HSDB_CUDA_FLASH_WGMMA=0 keeps
// it there on Hopper too.)
//
// Block: two warpgroups (256 threads) for one (query tile of up to 128
// tokens, head): warpgroup wg owns the tile's rows 64wg..64wg+63, its
// warp w rows 64wg + 16w..+15, as flash_attention.cu's warps, and these
// are the rows of w's quarter of every m64 wgmma fragment (thread t:
// rows 16·(t/32) + (t%32)/4 and +8; n8 block j: columns 8j + 2·(t%4) and
// +1 in d[4j..4j+3]), which is the mma.sync C layout flash_attention.cu's
// softmax works on, so that code carries over. A warpgroup skips the key
// tiles past its last row's position (all masked for it) and one without
// rows (a tile of 64 tokens or fewer) every tile; both load and wait at
// every barrier.
//
// Shared memory (1024-byte aligned; every [rows, 64] bf16 piece K-major in
// the 128-byte swizzle, row r's 16-byte chunk c at r·128 + ((c ^ r%8)·16),
// wgmma's SWIZZLE_128B):
//   Q     [128 queries, 192]: three [128, 64] pieces, S's A operand
//         (warpgroup wg's rows start 8 KiB into each piece)
//   K x3  [64 keys, 192]:    three [64, 64] pieces (dims 0-63, 64-127, 128-191)
//   V x3  [64 keys, 128]:    two [64 keys, 64 dims] pieces (dims 0-63, 64-127)
// S = Q·Kᵀ is m64n64 with A = Q and B = K, both K-major in shared
// memory: for k16 step kk each descriptor points 32·(kk%4) bytes into
// piece kk/4. O += P·V is m64n128 with A = P in registers (the S accumulators of key columns
// 16kk..16kk+15, packed to bf16: exactly the A fragment's layout) and
// B = V, whose rows are keys, i.e. the reduction dimension: V is MN-major
// (transposed, imm-trans-b 1). Its descriptor (CUTLASS's canonical
// MN-major SWIZZLE_128B layout, ((8, 8, m), (8, k)) : ((1, 8, LBO), (64,
// SBO)) in elements) has LBO = 8192 bytes from dims 0-63 to dims 64-127
// and SBO = 1024 bytes from one group of 8 keys to the next; k16 step kk
// starts 2048·kk bytes in (TestFlashAttention failed with the two
// swapped).
//
// Per key tile it: wait for its copies, fence them to the async proxy,
// barrier (every warpgroup is then done with tile it-1); issue tile
// it+2's copies into tile it-1's stage; S (12 wgmmas, waited); mask and
// online softmax as flash_attention.cu; O rescaled; P·V (4 wgmmas,
// waited).
#include "common.cuh"
#include "moe_widen.cuh"
#include "wgmma.cuh"

#define FW_DK 192
#define FW_DV 128
#define FW_NOPE 128                      // key dims from k; the rest (qk_rope) from kpe
#define FW_WG 2                          // warpgroups per block
#define FW_BM (64 * FW_WG)               // queries per block (engine/backend/cuda/flash.go's tiles)
#define FW_BN 64                         // keys per tile
#define FW_ST 3                          // key/value stages
#define FW_PIECE 8192                    // one [64, 64] bf16 piece
#define FW_Q (FW_WG * FW_DK / 64 * FW_PIECE)  // the query tile: 48 KiB
#define FW_K (FW_DK / 64 * FW_PIECE)     // one key stage: 24 KiB
#define FW_V (FW_DV / 64 * FW_PIECE)     // one value stage: 16 KiB
#define FW_NEG_INF __int_as_float(0xff800000)

// fw_desc_mn is the descriptor of an MN-major bf16 operand in the 128-byte
// swizzle at shared address addr: LBO 8192 bytes between 64-element
// blocks of the N dimension, SBO 1024 bytes between groups of 8 rows of
// the reduction dimension (see the file comment).
__device__ __forceinline__ unsigned long long fw_desc_mn(unsigned addr) {
    return (unsigned long long)((addr & 0x3ffffu) >> 4) | ((unsigned long long)(FW_PIECE >> 4) << 16) | (64ull << 32) |
           (1ull << 62);
}

// fw_off is the byte offset of element (r, d) of a tile of D/64 swizzled
// [rows, 64] pieces of R rows each.
template <int R>
__device__ __forceinline__ int fw_off(int r, int d) {
    return (d >> 6) * (R * 128) + r * 128 + ((((d >> 3) & 7) ^ (r & 7)) << 4) + (d & 7) * 2;
}

// fw_load copies rows row0..row0+R-1 (D elements each) into the [R, D]
// tile at dst made of D/64 swizzled pieces: elements 0..8·SPLIT-1 of a
// row from src (row stride ld elements), the rest from src2 (row stride
// ld2; its element 0 is the row's element 8·SPLIT); rows > last are
// zero-filled and not read. Each part is copied in rounds of 256 16-byte
// chunks: chunk i of the thread is row (tid + 256i) / C, chunk (tid +
// 256i) % C of the part's C chunks a row (consecutive threads copy
// consecutive bytes of a row; with C a power of two dividing 256 the
// thread keeps its chunk and steps 256/C rows a round).
template <int R, int D, int SPLIT = D / 8>
__device__ __forceinline__ void fw_load(unsigned char* dst, const bf16_t* src, long long ld, int row0, int last,
                                        const bf16_t* src2 = nullptr, long long ld2 = 0) {
    constexpr int CH = D / 8, C1 = SPLIT, C2 = CH - SPLIT, THREADS = 128 * FW_WG;
    static_assert(R * C1 % THREADS == 0 && R * C2 % THREADS == 0, "whole rounds of copies");
#pragma unroll
    for (int i = 0; i < R * C1 / THREADS; i++) {
        const int q = threadIdx.x + THREADS * i, r = q / C1, ch = q % C1;
        const bool ok = row0 + r <= last;
        mg_cp16(dst + fw_off<R>(r, ch * 8),
                ok ? (const void*)(src + (long long)(row0 + r) * ld + ch * 8) : (const void*)src, ok);
    }
    if constexpr (C2 > 0) {
#pragma unroll
        for (int i = 0; i < R * C2 / THREADS; i++) {
            const int q = threadIdx.x + THREADS * i, r = q / C2, ch = q % C2;
            const bool ok = row0 + r <= last;
            mg_cp16(dst + fw_off<R>(r, (SPLIT + ch) * 8),
                    ok ? (const void*)(src2 + (long long)(row0 + r) * ld2 + ch * 8) : (const void*)src2, ok);
        }
    }
}

// fw_mma_ss_n64: d[64 × 64] (+)= A[64 × 16] · B[64 × 16]ᵀ for one
// warpgroup, both K-major in shared memory (descriptors da, db); acc 0
// overwrites d, otherwise adds to it.
__device__ __forceinline__ void fw_mma_ss_n64(float (&d)[32], unsigned long long da, unsigned long long db, int acc) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n}\n"
        : WG_D32(0)
        : "l"(da), "l"(db), "r"(acc)
        : "memory");
}

// fw_bar_arrive and fw_bar_sync arrive at and wait on named barrier id of
// both warpgroups (256 threads; id 0 is __syncthreads'): one warpgroup
// arrives without waiting, the other waits until it has.
__device__ __forceinline__ void fw_bar_arrive(int id) { asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory"); }
__device__ __forceinline__ void fw_bar_sync(int id) { asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory"); }

// Keys and values are read where the caller keeps them: key dims 0-127
// (k_nope) of row j and kv head g at k + j·k_ld + g·k_hs, dims 128-191
// (k_pe) at kpe + j·pe_ld + g·pe_hs, values at v + j·v_ld + g·v_hs (all in
// elements). From a cache of keys [rows, kv_heads·192] and values [rows,
// kv_heads·128] (GPU.FlashAttention): kpe = k + 128, pe_ld = k_ld, k_hs =
// pe_hs = 192, v_hs = 128. Straight from kv_b_proj's output kv [rows,
// heads·256] (per head [k_nope | v]) and the one rotated k_pe [rows, 64]
// shared by all heads (GPU.FlashAttentionMLA): k = kv, kpe = k_pe, v = kv
// + 128, k_ld = v_ld = heads·256, pe_ld = 64, k_hs = v_hs = 256, pe_hs = 0,
// so no per-head key or value tensor is written at all.
//
// flash_wgmma_mla is the kernel (the file comment); PP orders the two
// warpgroups' products in each key tile (ping-pong, below).
template <bool PP>
__device__ __forceinline__ void flash_wgmma_mla(bf16_t* out, const bf16_t* q, const bf16_t* k, const bf16_t* kpe,
                                                const bf16_t* v, const int4* tiles, int heads, int group,
                                                long long q_ld, long long k_ld, long long pe_ld, long long v_ld,
                                                long long o_ld, int k_hs, int pe_hs, int v_hs, int window,
                                                float scale_log2) {
    extern __shared__ unsigned char fw_smem[];
    const unsigned raw = mg_smem_addr(fw_smem), base = (raw + 1023u) & ~1023u;
    unsigned char* sm = fw_smem + (base - raw);  // 1024-byte aligned (the host adds 1 KiB)
    unsigned char* Qs = sm;
    unsigned char* Ks = sm + FW_Q;                // [FW_ST] stages of FW_K
    unsigned char* Vs = sm + FW_Q + FW_ST * FW_K;  // [FW_ST] stages of FW_V
    const unsigned ka = base + FW_Q, va = base + FW_Q + FW_ST * FW_K;

    // Block b is head b % heads of tile b / heads (flash_attention.cu).
    const int h = blockIdx.x % heads;
    const int4 tile = tiles[blockIdx.x / heads];
    const int t0 = tile.x, kbase = tile.y, p0 = tile.z, n = tile.w;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, warp = (tid >> 5) & 3;
    const int g = lane >> 2, c = lane & 3;
    const int kstart = window > 0 ? max(0, p0 - window + 1) : 0;
    const int kend = p0 + n - 1;
    const int ntiles = (kend - kstart) / FW_BN + 1;
    // This warpgroup's rows 64wg..64wg+63 (none when 64wg >= n): its keys
    // end at its last row's position (later key tiles are all masked).
    const int wlast = p0 + min(n, 64 * wg + 64) - 1;
    const bool rows = 64 * wg < n;
    const int wlast0 = p0 + min(n, 64) - 1;  // warpgroup 0's last row's position

    const bf16_t* qg = q + (long long)t0 * q_ld + (long long)h * FW_DK;
    const bf16_t* kg = k + (long long)kbase * k_ld + (long long)(h / group) * k_hs;
    const bf16_t* pg = kpe + (long long)kbase * pe_ld + (long long)(h / group) * pe_hs;
    const bf16_t* vg = v + (long long)kbase * v_ld + (long long)(h / group) * v_hs;
    auto load = [&](int it) {
        const int st = it % FW_ST, j0 = kstart + it * FW_BN;
        fw_load<FW_BN, FW_DK, FW_NOPE / 8>(Ks + st * FW_K, kg, k_ld, j0, kend, pg, pe_ld);
        fw_load<FW_BN, FW_DV>(Vs + st * FW_V, vg, v_ld, j0, kend);
    };

    // Prologue: the query tile with key tile 0 (one commit group), key
    // tile 1 (another). The query tile stays in shared memory: S's A
    // operand is its warpgroup's 64 rows (8 KiB into each [128, 64]
    // piece), read by descriptor.
    fw_load<FW_BM, FW_DK>(Qs, qg, q_ld, 0, n - 1);
    load(0);
    mg_commit();
    if (ntiles > 1) load(1);
    mg_commit();
    mg_wait<1>();
    wg_proxy_fence();
    __syncthreads();
    const unsigned qa = base + wg * 64 * 128;  // this warpgroup's rows of piece 0
    const int r0 = 64 * wg + 16 * warp + g;

    int pr[2], lo[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        pr[i] = p0 + r0 + 8 * i;
        lo[i] = window > 0 ? max(0, pr[i] - window + 1) : 0;
    }
    const int pmin = p0 + 64 * wg + 16 * warp;
    float m[2] = {FW_NEG_INF, FW_NEG_INF}, l[2] = {0.f, 0.f};
    float o[64], s[32];
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.f;
#pragma unroll
    for (int i = 0; i < 32; i++) s[i] = 0.f;

    for (int it = 0; it < ntiles; it++) {
        // Tile it has landed (at most tile it+1's group in flight), is
        // visible to the async proxy, and every warpgroup is done with tile
        // it-1, whose stage tile it+2 then takes.
        if (it > 0) {
            mg_wait<1>();
            wg_proxy_fence();
            __syncthreads();
        }
        if (it + 2 < ntiles) load(it + 2);
        mg_commit();
        const int j0 = kstart + it * FW_BN;
        if (!rows || j0 > wlast) continue;  // every key of the tile is past this warpgroup's rows
        const int st = it % FW_ST;
        // Ping-pong (PP): when both warpgroups multiply this tile
        // (warpgroup 0 does, and 1 has rows: then its last row is later),
        // warpgroup 1 issues its S and its P·V only after warpgroup 0 has
        // issued its own (named barriers 1 and 2), so the tensor cores run
        // S of 0, S of 1, P·V of 0, P·V of 1 and each warpgroup's softmax
        // runs under the other's products, as FlashAttention-3's
        // inter-warpgroup schedule (Shah et al. 2024) orders them. Both
        // warpgroups compute pp alike.
        const bool pp = PP && n > 64 && j0 <= wlast0;
        if (pp && wg == 1) fw_bar_sync(1);

        // S = Q·Kᵀ over 12 k16 steps.
        const unsigned kb = ka + st * FW_K;
        wg_hold(s);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < FW_DK / 16; kk++)
            fw_mma_ss_n64(s, wg_desc(qa + (kk >> 2) * (FW_BM * 128) + (kk & 3) * 32),
                          wg_desc(kb + (kk >> 2) * FW_PIECE + (kk & 3) * 32), kk > 0);
        wg_commit();
        if (pp && wg == 0) fw_bar_arrive(1);
        wg_wait<0>();
        wg_hold(s);

        // Mask (flash_attention.cu): element e of n8 block nt is row e/2
        // (g or g+8), key j0 + 8nt + 2c + e%2. The scores stay unscaled:
        // the row maxima m are kept in the log2 domain (the raw maximum
        // times scale_log2 > 0, which keeps the order) and each exponent is
        // one fused s·scale_log2 − m (FlashAttention-2/3's FFMA), not a
        // scaling pass then a subtraction.
        const bool need_mask = j0 + FW_BN - 1 > pmin || (window > 0 && j0 < pmin + 15 - window + 1);
        if (need_mask) {
#pragma unroll
            for (int nt = 0; nt < FW_BN / 8; nt++) {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int j = j0 + nt * 8 + 2 * c + (e & 1);
                    if (j > pr[e >> 1] || j < lo[e >> 1]) s[4 * nt + e] = FW_NEG_INF;
                }
            }
        }
        // Online softmax, as flash_attention.cu (msub 0 while a row has
        // seen only masked keys, so no -inf - -inf).
        float alpha[2], msub[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            float mr = FW_NEG_INF;
#pragma unroll
            for (int nt = 0; nt < FW_BN / 8; nt++) mr = fmaxf(mr, fmaxf(s[4 * nt + 2 * i], s[4 * nt + 2 * i + 1]));
            mr = fmaxf(mr, __shfl_xor_sync(0xffffffffu, mr, 1));
            mr = fmaxf(mr, __shfl_xor_sync(0xffffffffu, mr, 2));
            const float mx = fmaxf(m[i], mr * scale_log2);
            msub[i] = mx == FW_NEG_INF ? 0.f : mx;
            float y;
            asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(m[i] - msub[i]));
            alpha[i] = y;
            m[i] = mx;
        }
        float rs[2] = {0.f, 0.f};
#pragma unroll
        for (int i = 0; i < 32; i++) {
            float y;
            asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(fmaf(s[i], scale_log2, -msub[(i >> 1) & 1])));
            s[i] = y;
            rs[(i >> 1) & 1] += y;
        }
#pragma unroll
        for (int i = 0; i < 2; i++) l[i] = l[i] * alpha[i] + rs[i];
#pragma unroll
        for (int i = 0; i < 64; i++) o[i] *= alpha[(i >> 1) & 1];

        // O += P·V: P's k16 step kk is n8 blocks 2kk (a[0], a[1]) and
        // 2kk+1 (a[2], a[3]) of S, rows g (a[0], a[2]) and g+8.
        unsigned pa[4][4];
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int b = 4 * (2 * kk + (r >> 1)) + 2 * (r & 1);
                asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pa[kk][r]) : "f"(s[b + 1]), "f"(s[b]));
            }
        }
        const unsigned vb = va + st * FW_V;
        if (pp && wg == 1) fw_bar_sync(2);
        wg_hold(o);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++) wg_mma_rs_n128<1>(o, pa[kk], fw_desc_mn(vb + kk * 2048));
        wg_commit();
        if (pp && wg == 0) fw_bar_arrive(2);
        wg_wait<0>();
        wg_hold(o);
    }

    // Normalise and store rows < n (flash_attention.cu): o[4dn..4dn+1] are
    // dims 8dn + 2c, +1 of row r0, o[4dn+2..4dn+3] of row r0 + 8.
#pragma unroll
    for (int i = 0; i < 2; i++) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    }
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int r = r0 + 8 * i;
        if (r >= n) continue;
        const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
        unsigned* orow = (unsigned*)(out + (long long)(t0 + r) * o_ld + (long long)h * FW_DV);
#pragma unroll
        for (int dn = 0; dn < FW_DV / 8; dn++) {
            unsigned pk;
            asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pk) : "f"(o[4 * dn + 2 * i + 1] * inv), "f"(o[4 * dn + 2 * i] * inv));
            orow[dn * 4 + c] = pk;
        }
    }
}

// flash_wgmma_mla_bf16 is the kernel with ping-pong; _lockstep without
// (HSDB_CUDA_FLASH_PINGPONG=0, engine/backend/cuda's flashPingPong).
#define FW_ENTRY(name, PP)                                                                                        \
    extern "C" __global__ void __launch_bounds__(128 * FW_WG, 1)                                                  \
        name(bf16_t* out, const bf16_t* q, const bf16_t* k, const bf16_t* kpe, const bf16_t* v, const int4* tiles, \
             int heads, int group, long long q_ld, long long k_ld, long long pe_ld, long long v_ld, long long o_ld,  \
             int k_hs, int pe_hs, int v_hs, int window, float scale_log2) {                                        \
        flash_wgmma_mla<PP>(out, q, k, kpe, v, tiles, heads, group, q_ld, k_ld, pe_ld, v_ld, o_ld, k_hs, pe_hs,    \
                            v_hs, window, scale_log2);                                                            \
    }
FW_ENTRY(flash_wgmma_mla_bf16, true)
FW_ENTRY(flash_wgmma_mla_bf16_lockstep, false)
