// moe_wgra.cu: the routed experts' grouped GEMM on Hopper's warpgroup
// MMAs with the weights as the A operand, for fp8 e4m3 with f32 block
// scales and packed int4 with bf16 group scales at prefill sizes. The
// contract is moe_gemm.cu's (read that file's comment: rows permuted by
// expert, device-side offsets and row-tile starts from moe_gemm_tiles,
// weights read as stored, each value widened to the bf16 that the
// dequantize-on-load kernels write, the gather of the tokens and SiLU·mul
// fused into the gate/up GEMM); what differs from moe_wgmma.cu is the
// operand order.
//
// moe_wgmma.cu multiplies tokens (A, shared memory) by widened weights
// (B): every thread widens a share of the whole weight tile, stores it to
// shared memory, and all warpgroups wait at a barrier before their MMAs
// read it. Nsight Compute found those kernels bound by the widening
// (issue slots ~43 % busy, stalls on fixed-latency dependencies). Here the
// product is transposed, out[tokens, N]ᵀ = W[N, K] · x[tokens, K]ᵀ: the
// weights are the A operand, 64 weight rows per warpgroup, and each
// warpgroup widens only its own rows; the tokens are the B operand in
// shared memory (K-major in the 128-byte swizzle, as moe_wgmma.cu's A).
// Each thread widens exactly the 32 values per k tile of its own A
// fragment (rows 16·warp + lane/4 and +8, columns 2·(lane%4) + {0, 1, 8,
// 9} of each k16 step) from the raw tile in shared memory into registers.
// ptxas (CUDA 13, sm_90a) serializes wgmmas whose register operand is
// written while an MMA that may read it is in flight (C7513: "non wgmma
// instructions defining input registers of a wgmma between start and end
// of the pipeline stage"). Two schedules (IL):
//   - double-buffered (tiles r, h): the next k tile is widened into the
//     other of two register buffers while the MMAs of this one run, with
//     wait_group 1 after each k tile's four MMAs; ptxas serializes these
//     (C7513), and measured, r is still the fastest at 128 tokens for fp8
//     and from 64 to 128 rows per expert for int4, h at 64 tokens;
//   - interleaved (IL, tile c, 192 tokens × 192 weight rows, three
//     warpgroups): one commit group per k16 step and wait_group 3 after
//     each, after which the step three back, the last reader of fragment
//     ks+1, is done, so ks+1 is widened right then (the order of CUTLASS's
//     mixed-input RS mainloop): no C7513, and the MMAs overlap the
//     widening.
//
// Measured on an H200 (BenchmarkMoEGrouped, ms per layer, one run with all
// tiles): Kimi-K2.5 int4 at 8192 tokens (171 rows per expert) c 14.5
// against 17.9 for the tile it replaced (t: A widened into a shared-memory
// tile per warpgroup, read by SS wgmmas; its widened tile's store and the
// MMAs' reads of it made the shared memory the bound) and 20.3 on r; at
// 4096 (85) c 12.3, r 10.2; DeepSeek-V3 fp8 at 4096 tokens (128 rows) c
// 9.1 against t's 9.7 and r's 9.8, at 8192 (256) c 17.8 against r's 16.4.
// c with five or six stages measured no faster (int4 at 171 rows 14.8
// against 14.4, fp8 at 128 rows 9.1 against 8.6, one run), nor c with its
// MMAs cut to the tile's routed rows at 128 rows and more (m64nNk16 with N
// the rows rounded up to 32, 64, 96, 128, 144, 160, 176 or 192, the
// mainloop instantiated per N: fp8 at 128 rows 8.65, int4 at 171 rows
// 15.5): there the tile is not bound by its MMAs. Below, it is: a tile of
// at most 96 or 128 rows runs m64n96 or m64n128 (and copies only those
// token rows), which took Kimi-K2.5's int4 MoE at 4096 tokens (85 rows
// per expert; BenchmarkKimiMoEInt4, two layers) from 23.8 ms to 21.2-21.3.
// The interleaved schedule on r's and h's shapes measured level with
// them (int4 85 rows 9.9 against 10.2, fp8 64 rows 6.3 against 6.5) but
// behind at fp8 256 rows (19.5 against 16.4), so r and h keep theirs.
//
// Warp-specialized forms (a producer warpgroup copies every stage with
// cp.async and hands it on through mbarriers, arriving when its copies
// land; each consumer warpgroup releases a stage once its MMAs on it are
// done, so no warpgroup waits for another) were written and measured, and
// removed: none was faster where it would be used (int4 at 8192 tokens:
// t 17.5, the forms 16.9-23.8; fp8 at 4096 tokens: t 10.0, r 10.1, the
// forms 10.3-11.9; bf16 experts at 4096 tokens 8.3 against moe_wgmma.cu's
// y 7.8; with a single producer warp, 21-32 at int4 8192 tokens: the
// copies of a [192, 64] token tile are 1536 cp.async per k tile). Again
// on c's interleaved schedule (three multiplying warpgroups raised to 152
// registers by setmaxnreg and a copying one lowered to 56, a full and an
// empty mbarrier per stage, no block barrier in the mainloop; four or six
// stages; correct on every GPU test): BenchmarkKimiMoEInt4, two layers,
// int4 at 8192 tokens 30.5 and 29.8 ms against c's 28.0, at 4096 20.4 and
// 20.8 against c's 21.2 and p's 19.4; fp8 at 128 rows per expert 9.5 and
// 10.6 against c's 8.1. So neither the block barrier nor the copies'
// instructions are what keeps c from overlapping its widening with its
// MMAs.
//
// build: sm_90a
// (as moe_wgmma.cu: the PTX is marked sm_90a by scripts/build-kernels.sh;
// engine/backend/cuda uses these kernels only on compute capability 9.0.)
//
// Block: WG warpgroups, RB = 64·WG weight rows × BN tokens (one row tile of
// BN routed rows of one expert), k tiles of 64. With GLU, the 16 rows of
// each warp are 8 gate rows and the same 8 columns' up rows (local row r:
// gate (r/8 even) or up (odd) row n0 + 8·(r/16) + r%8), so a thread's two
// accumulator rows are the gate and up sums of one output column. Down:
// local row r is weight row n0 + r.
// Shared memory, 1024-byte aligned: ST stages of { tokens [BN, 64] bf16
// in the 128-byte swizzle, raw weights [RB, 64] as stored (fp8: 64 bytes
// a row, int4: 32) }; after the mainloop, with SE, the down projection's
// [BN, RB + 8] bf16 outputs on their way out.
//
// Widening into the fragment (registers). int4: the byte of packed word w
// holding columns 2c, 2c+1 (c = lane%4) is moved by one prmt to bits 0-7
// and, from w >> 4, to bits 16-23, so that its low nibble lies in bits
// 0-3 and its high nibble in 16-19: mg_int4x2 makes the bf16x2 (column
// 2c, 2c+1) from it (tiles r and h). The interleaved tiles (c, p: PM)
// take the k columns in a permuted order in each block of 32, so that
// the thread's eight values of the block (fragment columns 2c, 2c+1, 2c+8,
// 2c+9 of both k16 steps) are the eight nibbles of one stored word, word
// c, pair j (j = 2·step + 0 or 1 for the columns +8) in nibbles j and
// j+4: fragment column 16s + 8h + 2c + e is stored column 8c + 2s + h +
// 4e. One 32-bit shared load per row and block and a shift by a constant
// (w >> 4j) put each pair's nibbles in bits 0-3 and 16-19. The tokens are
// permuted alike (gate/up: moe_wgra_permute_k32 writes a permuted copy of
// x first; down_proj: gate/up's epilogue stores its output in that
// order), and a dot product over k does not depend on the order; a block
// of 32 lies in one scale group. Measured (H200, BenchmarkKimiMoEInt4,
// two layers, the same run, permuted against not): blocks of 8 (fragment
// columns 2c, 2c+1 from stored c, c+4: one 64-bit load per row and k16
// step, w >> 4c) took c at 4096 tokens from 21.59-22.14 ms to
// 19.85-19.89, at 8192 from 27.79-29.05 to 27.34-27.54, p at 4096 from
// 17.98 to 17.87 (the copy of x included); blocks of 32 against blocks of
// 8 (two runs of two each): p at 4096 tokens 17.03-17.58 against
// 17.56-18.19, at 5376 (112 rows per expert) 19.84-20.06 against
// 21.61-21.72; c level (8192: 26.58-28.50 against 27.06-28.04; 5376 21.98
// and 22.13 against 21.97 and 21.88); c against c unpermuted at 8192
// tokens 27.15-27.57 against 28.80-28.83. fp8 on c and p (PM) likewise,
// in blocks of 64 (a k tile): fragment column 16s + 8h + 2c + e is stored
// column 16c + 4s + 2h + e, so chunk c of a raw row holds the thread's
// 16 values of the k tile, one 128-bit shared load per row and k tile
// (instead of one per k16 step, of which a quarter was used), and each
// pair is a halfword of it with no prmt (moe_wgra_permute_k64; K % 64 ==
// 0, else the host takes the fallback tile). Measured (BenchmarkMoEGrouped,
// DeepSeek-V3's experts, one layer, one run): 4096 tokens (128 rows per
// expert) 8.11 ms against 8.68 unpermuted, 8192 16.12 against 16.40. fp8
// on r and h (unpermuted): the halfword of columns 2c, 2c+1 of an 8-byte
// group is moved by one prmt and widened by mg_fp8x2. Scales as
// moe_gemm.cu's (int4: one per row and group qa, 32 or a power of two >=
// 64, so each half of a k tile lies in one group; fp8: one per row block
// and k tile, qb 64 times a power of two); past K a scale is 0 and the
// zero-filled raw bytes widen to ±0; rows past N read row 0's scales
// (their sums are never stored).
//
// Pipeline per k tile kt (all threads load; each warpgroup widens and
// multiplies its own rows): wait for tile kt's copies, fence them to the
// async proxy, barrier (after which every warpgroup's MMAs of tile kt-2
// are done, so that stage is free); issue the copies of tile kt+ST-2;
// read the raw rows and widen; fence, four wgmmas (k16 steps), commit,
// wait until only this tile's are in flight (IL: the barrier comes after
// tile kt-1's last step is issued, when tile kt-2's MMAs are done, and
// each step is widened, issued, committed and waited for as above; a
// step's raw words are read from shared memory one step ahead, the first
// step's between the barrier and the copies' issue; on c and p int4 reads
// a block of 32 columns' words at steps 0 and 2, fp8 a k tile's at step
// 0).
// Nsight Compute on c (int4 gate/up at 8192 tokens) found the warps
// waiting mostly on those shared-memory reads (the widening's first
// instruction stalled on its read in 20 % of the samples, and the read
// itself behind the copies' registers), with the tensor pipe 62 % busy;
// reading one step ahead, the raw rows' chunks swizzled (below), and the
// int4 scales' form fixed at compile time (PAIR) made c 4-10 % faster
// (BenchmarkMoEGrouped, one run with both binaries: int4 at 171 rows
// 13.09-13.67 ms against 13.86-14.20, at 85 rows 9.16 against 10.07; fp8
// at 128 rows 8.19 against 9.06).
//
// Requirements (the host checks them, wgraTakes, and takes moe_wgmma.cu
// otherwise): fp8 with K % 16 == 0 and qb 64 times a power of two; int4
// with bf16 scales, K % 32 == 0 and qa 32 or a power of two >= 64; 16-byte
// aligned x, weights and outputs.
#include "common.cuh"
#include "moe_widen.cuh"
#include "wgmma.cuh"

// wr_mma_n128: d[64 × 128] += A[64 × 16] · B[128 × 16]ᵀ for one warpgroup,
// A in registers a, B K-major in shared memory (descriptor db):
// wgmma.cuh's wg_mma_rs_n128; accumulators as wg_mma_n256's.
__device__ __forceinline__ void wr_mma_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long db) {
    wg_mma_rs_n128<0>(d, a, db);
}

// wr_mma_n192: wr_mma_n128 for 192 tokens.
__device__ __forceinline__ void wr_mma_n192(float (&d)[96], const unsigned (&a)[4], unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, "
        "{%96, %97, %98, %99}, %100, p, 1, 1, 0;\n}\n"
        : WG_D32(0), WG_D32(32), WG_D32(64)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1)
        : "memory");
}

// wr_mma_n64: wr_mma_n128 for 64 tokens (wgmma.cuh's wg_mma_rs_n64).
__device__ __forceinline__ void wr_mma_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long db) {
    wg_mma_rs_n64(d, a, db, 1);
}

// wr_mma_n96: wr_mma_n128 for 96 tokens.
__device__ __forceinline__ void wr_mma_n96(float (&d)[48], const unsigned (&a)[4], unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "
        "{%48, %49, %50, %51}, %52, p, 1, 1, 0;\n}\n"
        : WG_D32(0), WG_D8(32), WG_D8(40)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1)
        : "memory");
}

// wr_mma is the m64nBNk16 product with A in registers (BN 64, 128 or
// 192).
template <int BN>
__device__ __forceinline__ void wr_mma(float (&d)[BN / 2], const unsigned (&a)[4], unsigned long long db) {
    static_assert(BN == 64 || BN == 128 || BN == 192, "register-operand tiles have 64, 128 or 192 tokens");
    if constexpr (BN == 64) wr_mma_n64(d, a, db);
    else if constexpr (BN == 128) wr_mma_n128(d, a, db);
    else wr_mma_n192(d, a, db);
}

// wr_mma_part is the m64nNVk16 product into the first NV/2 of a tile's BN/2
// accumulators (tokens 0 to NV-1 of the m64nBN fragment, whose n8 blocks
// come in the same order): a row tile of at most NV routed rows skips the
// products of tokens it does not have.
template <int NV, int BN>
__device__ __forceinline__ void wr_mma_part(float (&d)[BN / 2], const unsigned (&a)[4], unsigned long long db) {
    static_assert(NV == 96 || NV == 128 || NV == BN, "a part of 96 or 128 tokens, or the whole tile");
    if constexpr (NV == BN) wr_mma<BN>(d, a, db);
    else if constexpr (NV == 96) wr_mma_n96(*reinterpret_cast<float(*)[48]>(&d[0]), a, db);
    else wr_mma_n128(*reinterpret_cast<float(*)[64]>(&d[0]), a, db);
}

// wr_bool and wr_int are compile-time values passed to a generic lambda
// (the mainloop compiled once per value).
template <bool B>
struct wr_bool {
    static constexpr bool value = B;
};
template <int V>
struct wr_int {
    static constexpr int value = V;
};
// wr_raw is the type of one k16 step's raw bytes of one weight row: 8
// int4 bytes (uint2) or 16 fp8 bytes (uint4).
template <int WK>
struct wr_raw {
    using type = uint4;
};
template <>
struct wr_raw<MG_INT4> {
    using type = uint2;
};

// moe_wgra: see the file comment. Arguments as moe_gemm.cu's moe_gemm.
template <int WG, int BN, int ST, bool IL, bool PM, bool SE, int WK, bool GLU>
__device__ __forceinline__ void moe_wgra(bf16_t* out, const bf16_t* x, const int* xidx, const unsigned long long* wptr,
                                         const int* offsets, const int* tiles, int nexp, int N, int K,
                                         long long scale_off, int qa, int qb, int qc) {
    constexpr int BK = MG_BK, THREADS = 128 * WG, RB = 64 * WG;
    constexpr int P = GLU ? 2 : 1, PR = RB / P;                    // PR: output columns per block
    constexpr int NACC = BN / 2;                                    // accumulators per thread (64·BN / 128)
    constexpr int RBYTES = WK == MG_FP8 ? 64 : 32;                  // raw bytes per weight row and k tile
    constexpr int CPR = RBYTES / 16;                                // 16-byte copies per raw row
    constexpr int X_BYTES = BN * 128, STAGE = X_BYTES + RB * RBYTES;
    constexpr int X_ITERS = BN * 8 / THREADS, W_ITERS = RB * CPR / THREADS;
    static_assert(WK == MG_FP8 || WK == MG_INT4, "quantized weights only");
    static_assert(STAGE % 1024 == 0 && X_ITERS * THREADS == BN * 8 && W_ITERS * THREADS == RB * CPR, "tile");
    static_assert(ST >= 3, "the pipeline keeps one stage in the MMAs and one being read");
    // PMW: int4 with the k columns permuted in blocks of 32
    // (moe_wgra_permute_k32); PMF: fp8 in blocks of 64, a k tile
    // (moe_wgra_permute_k64; K % 64 == 0).
    constexpr bool PMW = PM && WK == MG_INT4, PMF = PM && WK == MG_FP8;
    static_assert(!PM || IL, "the permuted k order is widened by the interleaved schedule");

    extern __shared__ unsigned char wr_smem[];
    const unsigned raw = mg_smem_addr(wr_smem), base = (raw + 1023u) & ~1023u;
    unsigned char* sm = wr_smem + (base - raw);  // 1024-byte aligned (the host adds 1 KiB)

    const int tile = blockIdx.y;
    if (tile >= tiles[nexp]) return;
    const int e = mg_tile_expert(tiles, nexp, tile);
    const int m0 = offsets[e] + (tile - tiles[e]) * BN, m1 = offsets[e + 1];
    const int n0 = blockIdx.x * PR;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, warp = (tid >> 5) & 3;
    const int g = lane >> 2, c = lane & 3;
    const int KT = (K + BK - 1) / BK;
    const unsigned char* wb0 = (const unsigned char*)wptr[(long long)e * P];
    const unsigned char* wb1 = GLU ? (const unsigned char*)wptr[(long long)e * P + 1] : wb0;
    const long long rowBytes = WK == MG_FP8 ? (long long)K : K / 2;

    // Local weight row r: its output column (−1 past N) and part.
    auto colOf = [&](int r) { int n = GLU ? n0 + 8 * (r >> 4) + (r & 7) : n0 + r; return n < N ? n : -1; };
    auto partOf = [&](int r) { return GLU ? (r >> 3) & 1 : 0; };

    // Copies: token row tid/8 + i·THREADS/8, chunk tid%8 (32-bit element
    // offsets as moe_wgmma.cu); raw weight row tid/CPR + i·THREADS/CPR,
    // chunk tid%CPR. A copy past the rows, N or K reads nothing (src-size
    // 0), so its address is formed but never used.
    const int ac = tid & 7;
    unsigned aoff[X_ITERS];
#pragma unroll
    for (int i = 0; i < X_ITERS; i++) {
        int m = m0 + (tid >> 3) + i * (THREADS / 8);
        aoff[i] = m < m1 ? (unsigned)(xidx ? xidx[m] : m) * (unsigned)K + ac * 8 : ~0u;
    }
    const int wc = tid % CPR;
    // Raw weight rows lie in shared memory with their 16-byte chunks
    // swizzled, chunk j of local row r at (j ^ wswz(r))·16 (int4: r/4 % 2,
    // fp8: r/2 % 4), so that the eight rows a warp's fragment reads at one
    // k offset (rows 16·warp + g, g < 8, each read by its four lanes c)
    // fall in distinct banks: unswizzled, rows 128 bytes apart share banks
    // (int4 rows g and g+4, fp8 rows g, g+2, g+4, g+6).
    auto wswz = [](int r) { return WK == MG_FP8 ? (r >> 1) & 3 : (r >> 2) & 1; };
    const unsigned char* wsrc[W_ITERS];  // nullptr past N
#pragma unroll
    for (int i = 0; i < W_ITERS; i++) {
        const int r = tid / CPR + i * (THREADS / CPR), n = colOf(r);
        wsrc[i] = n < 0 ? nullptr : (partOf(r) ? wb1 : wb0) + (long long)n * rowBytes + wc * 16;
    }
    // load: k tile kt into stage s; token rows from NV on (NVT, a
    // wr_int: the MMAs' part, below) are never read and not copied.
    auto load = [&](int s, int kt, auto NVT) {
        constexpr int NV = decltype(NVT)::value;
        unsigned char* st = sm + s * STAGE;
        const int k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < X_ITERS; i++) {
            int r = (tid >> 3) + i * (THREADS / 8);
            if (i * (THREADS / 8) >= NV || (NV < BN && r >= NV)) continue;
            mg_cp16(st + r * 128 + ((ac ^ (r & 7)) << 4), x + aoff[i] + k0, aoff[i] != ~0u && k0 + ac * 8 < K);
        }
#pragma unroll
        for (int i = 0; i < W_ITERS; i++) {
            int r = tid / CPR + i * (THREADS / CPR);
            const int per = WK == MG_FP8 ? 16 : 32;  // k per copy
            mg_cp16(st + X_BYTES + r * RBYTES + ((wc ^ wswz(r)) << 4), wsrc[i] + (WK == MG_FP8 ? k0 : k0 / 2),
                    wsrc[i] != nullptr && k0 + wc * per < K);
        }
    };

    // This thread's fragment rows (h = 0: row g, 1: row g+8 of its warp's
    // 16) and their scale rows: element offsets into the expert's scales
    // (row 0's past N).
    const int lr0 = wg * 64 + warp * 16 + g;
    const unsigned char* sb[2];
    int soff[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = lr0 + 8 * h, n = colOf(r);
        sb[h] = (partOf(r) ? wb1 : wb0) + scale_off;
        soff[h] = n < 0 ? 0 : WK == MG_FP8 ? (n / qa) * qc : n * qc;
    }
    const int sw = wswz(lr0);  // = wswz(lr0 + 8) for both kinds
    // woff: byte offset in a raw row of the 8 (int4) or 16 (fp8) bytes of
    // k16 step ks (int4: half ks%2 of chunk ks/2).
    auto woff = [&](int ks) { return WK == MG_FP8 ? (ks ^ sw) << 4 : (((ks >> 1) ^ sw) << 4) + 8 * (ks & 1); };
    const int lg = __ffs(qa) - 1;  // int4: log2 of the group
    const bool pair = qa == 32 && K % 64 == 0;
    const int lk = WK == MG_FP8 ? __ffs(qb / BK) - 1 : 0;  // fp8: log2 of the k tiles per scale column
    // Scales of k tile kt: sc[h][ks] (int4: the bf16 in both halves, of
    // the groups of k0 (ks 0, 1) and k0+32 (ks 2, 3): with qa = 32 and K a
    // multiple of 64 (pair) the two adjacent bf16 at an even index, read at
    // once; fp8: f32 bits, the same
    // for every ks). Rows past N read row 0's scales (their sums are never
    // stored); the half of a k tile past K gets scale 0.
    // PAIR (wr_bool) is pair as a constant: the mainloop is compiled once
    // for each, so a k tile's scales cost two loads and no predicated-off
    // other form.
    auto scales = [&](auto PAIR, int kt, unsigned (&sc)[2][4]) {
        const int k0 = kt * BK;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if (WK == MG_FP8) {
                const unsigned v = __ldg((const unsigned*)sb[h] + soff[h] + (kt >> lk));
#pragma unroll
                for (int ks = 0; ks < 4; ks++) sc[h][ks] = v;
            } else {
                unsigned v0, v1;
                const bf16_t* sr = (const bf16_t*)sb[h] + soff[h];
                if constexpr (decltype(PAIR)::value) {
                    const unsigned v = __ldg((const unsigned*)(sr + (k0 >> 5)));
                    v0 = __byte_perm(v, 0, 0x1010);
                    v1 = __byte_perm(v, 0, 0x3232);
                } else {
                    const bool in = k0 + 32 < K;
                    v0 = __ldg(sr + (k0 >> lg));
                    v1 = __ldg(sr + ((in ? k0 + 32 : k0) >> lg));
                    v0 |= v0 << 16;
                    v1 = in ? v1 | (v1 << 16) : 0u;
                }
                sc[h][0] = sc[h][1] = v0;
                sc[h][2] = sc[h][3] = v1;
            }
        }
    };
    // Selectors: int4, byte c of w to bits 0-7 and byte c of w>>4 to bits
    // 16-23; fp8, bytes 2c and 2c+1 of an 8-byte group (two words) to bits
    // 0-15.
    const unsigned sel4 = (unsigned)c | ((unsigned)(c + 4) << 8);
    const unsigned sel8 = (unsigned)(2 * c) | ((unsigned)(2 * c + 1) << 4);
    // widen: k tile in stage s with scales sc into fragment a[ks][4].
    auto widen = [&](int s, const unsigned (&sc)[2][4], unsigned (&a)[4][4]) {
        const unsigned char* rw = sm + s * STAGE + X_BYTES;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const unsigned char* row = rw + (lr0 + 8 * h) * RBYTES;
            if (WK == MG_INT4) {
                const uint4 lo = *(const uint4*)(row + (sw << 4)), hi = *(const uint4*)(row + ((1 ^ sw) << 4));
                const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                for (int ks = 0; ks < 4; ks++)
#pragma unroll
                    for (int j = 0; j < 2; j++) {
                        const unsigned q = w[2 * ks + j];
                        a[ks][h + 2 * j] = mg_int4x2(__byte_perm(q, q >> 4, sel4), sc[h][ks]);
                    }
            } else {
#pragma unroll
                for (int ks = 0; ks < 4; ks++) {
                    const uint4 u = *(const uint4*)(row + woff(ks));
                    const float f = __uint_as_float(sc[h][ks]);
                    a[ks][h] = mg_fp8x2((unsigned short)__byte_perm(u.x, u.y, sel8), f);
                    a[ks][h + 2] = mg_fp8x2((unsigned short)__byte_perm(u.z, u.w, sel8), f);
                }
            }
        }
    };

    // Raw words of one k16 step of the thread's two rows (int4: 8 bytes,
    // columns 0-7 and 8-15 of the step; fp8: 16 bytes), read from shared
    // memory one step ahead of their widening (IL), so that the read's
    // latency passes under the MMA issued in between.
    // PMW: the word of the thread's two rows that holds its 8 values of a
    // block of 32 k columns (word c of the block's 16-byte chunk), read
    // at steps 0 (block 0: steps 0, 1) and 2 (block 1: steps 2, 3); the
    // other steps read nothing. PMF: the 16 bytes of the thread's two rows
    // that hold its values of the k tile (chunk c), read at step 0.
    using RawT = typename wr_raw<WK>::type;
    RawT rn[2];
    unsigned wq[2][2];
    auto fetch = [&](int s, int ks) {
        const unsigned char* rw = sm + s * STAGE + X_BYTES;
        if constexpr (PMW) {
            if (ks == 0 || ks == 2)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    wq[ks >> 1][h] = *(const unsigned*)(rw + (lr0 + 8 * h) * RBYTES + (((ks >> 1) ^ sw) << 4) + 4 * c);
        } else if constexpr (PMF) {
            if (ks == 0)
#pragma unroll
                for (int h = 0; h < 2; h++) rn[h] = *(const RawT*)(rw + (lr0 + 8 * h) * RBYTES + ((c ^ sw) << 4));
        } else {
#pragma unroll
            for (int h = 0; h < 2; h++) rn[h] = *(const RawT*)(rw + (lr0 + 8 * h) * RBYTES + woff(ks));
        }
    };
    // conv: the fetched step ks with scales sc into fragment a (the part
    // of widen's a[ks]).
    auto conv = [&](int ks, const unsigned (&sc)[2][4], unsigned (&a)[4]) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if constexpr (PMW) {
                // k permuted in blocks of 32: word c of block ks/2 holds
                // the thread's fragment columns of steps ks/2·2 and +1,
                // pair j = 2·(ks%2) + (0: columns 2c, 2c+1; 1: 2c+8, 2c+9)
                // in nibbles j and j+4.
                const unsigned w = wq[ks >> 1][h];
                a[h] = mg_int4x2(w >> (8 * (ks & 1)), sc[h][ks]);
                a[h + 2] = mg_int4x2(w >> (8 * (ks & 1) + 4), sc[h][ks]);
            } else if constexpr (PMF) {
                // k permuted in blocks of 64: word ks of chunk c holds the
                // thread's fragment columns of step ks, 2c and 2c+1 in its
                // low half, 2c+8 and 2c+9 in its high half.
                const unsigned w = ks == 0 ? rn[h].x : ks == 1 ? rn[h].y : ks == 2 ? rn[h].z : rn[h].w;
                const float f = __uint_as_float(sc[h][ks]);
                a[h] = mg_fp8x2((unsigned short)(w & 0xffffu), f);
                a[h + 2] = mg_fp8x2((unsigned short)(w >> 16), f);
            } else if constexpr (WK == MG_INT4) {
                a[h] = mg_int4x2(__byte_perm(rn[h].x, rn[h].x >> 4, sel4), sc[h][ks]);
                a[h + 2] = mg_int4x2(__byte_perm(rn[h].y, rn[h].y >> 4, sel4), sc[h][ks]);
            } else {
                const float f = __uint_as_float(sc[h][ks]);
                a[h] = mg_fp8x2((unsigned short)__byte_perm(rn[h].x, rn[h].y, sel8), f);
                a[h + 2] = mg_fp8x2((unsigned short)__byte_perm(rn[h].z, rn[h].w, sel8), f);
            }
        }
    };

    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; i++) acc[i] = 0.f;

    // enter: the block-wide part of k tile kt: wait for its copies, fence,
    // barrier, copy tile kt+ST-2; between the barrier and the copies, the
    // first step's raw words are read (IL), so the copies' address
    // arithmetic covers the read. (A barrier every two k tiles, waiting
    // for two tiles and copying two, with five or six stages, measured
    // slower: int4 at 85 rows per expert 13.5 ms against 10.2, fp8 at 128
    // rows 12.6 against 10.2.)
    auto enter = [&](int kt, auto NVT) {
        mg_wait<ST - 3>();
        wg_proxy_fence();
        __syncthreads();
        if constexpr (IL) fetch(kt % ST, 0);
        if (kt + ST - 2 < KT) load((kt + ST - 2) % ST, kt + ST - 2, NVT);
        mg_commit();
    };
    auto mainloop = [&](auto PAIR, auto NVT) {
#pragma unroll
        for (int s = 0; s < ST - 2; s++) {
            if (s < KT) load(s, s, NVT);
            mg_commit();
        }
        unsigned sc[2][4];
        scales(PAIR, 0, sc);
        if (IL && colOf(wg * 64) < 0) {
            // A warpgroup whose 64 rows all lie past N (the last column
            // tile: c's 96 gate/up columns do not divide 2048, nor its 192
            // rows 7168) widens and multiplies nothing; it copies and waits
            // at each k tile's barrier with the others, and stores nothing.
            // Measured (H200, one run, skipping against not): Kimi-K2.5's
            // int4 MoE at 8192 tokens (BenchmarkKimiMoEInt4, two layers)
            // 27.35 and 28.20 ms against 28.97 and 27.87; DeepSeek-V3's fp8
            // experts at 4096 tokens (BenchmarkMoEGrouped) 8.27 against 8.45.
            for (int kt = 0; kt < KT; kt++) enter(kt, NVT);
        } else if constexpr (IL) {
            // Interleaved (IL): one commit group per k16 step; after step
            // ks is issued and at most three groups are in flight, the step
            // that last read fragment ks+1 (three steps back) is done, so
            // ks+1 is widened then, right before its own step (as CUTLASS's
            // mixed-input RS mainloop orders it): no fragment is written
            // while an MMA that reads it is in flight.
            unsigned a[4][4], scn[2][4];
#pragma unroll
            for (int ks = 0; ks < 4; ks++)
#pragma unroll
                for (int i = 0; i < 4; i++) a[ks][i] = 0u;
            enter(0, NVT);
            conv(0, sc, a[0]);
            fetch(0, 1);
            for (int kt = 0; kt < KT; kt++) {
                const int s = kt % ST;
                const unsigned long long db = wg_desc(base + s * STAGE);
                if (kt + 1 < KT) scales(PAIR, kt + 1, scn);
#pragma unroll
                for (int ks = 0; ks < 4; ks++) {
                    wg_hold(acc);
                    wg_fence();
                    wr_mma_part<decltype(NVT)::value, BN>(acc, a[ks], db + 2 * ks);
                    wg_commit();
                    wg_wait<3>();
                    wg_hold(acc);
                    if (ks < 3) {
                        conv(ks + 1, sc, a[ks + 1]);
                        if (ks < 2) fetch(s, ks + 2);
                    }
                }
                if (kt + 1 < KT) {
                    enter(kt + 1, NVT);
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int ks = 0; ks < 4; ks++) sc[h][ks] = scn[h][ks];
                    conv(0, sc, a[0]);
                    fetch((kt + 1) % ST, 1);
                }
            }
            wg_wait<0>();
            wg_hold(acc);
#pragma unroll
            for (int ks = 0; ks < 4; ks++) wg_hold_r(a[ks]);
        } else {
            // Double-buffered: one k tile into register buffer a (kt's
            // parity); b is the other buffer, read by the MMAs of tile
            // kt-1: after this tile's wait those are done, and the hold
            // keeps b's registers from being reused before.
            unsigned a0[4][4], a1[4][4];
#pragma unroll
            for (int ks = 0; ks < 4; ks++)
#pragma unroll
                for (int i = 0; i < 4; i++) a0[ks][i] = a1[ks][i] = 0u;
            auto step = [&](int kt, auto& a, auto& b) {
                enter(kt, NVT);
                const int s = kt % ST;
                widen(s, sc, a);
                if (kt + 1 < KT) scales(PAIR, kt + 1, sc);
                const unsigned long long db = wg_desc(base + s * STAGE);
                wg_hold(acc);
                wg_fence();
#pragma unroll
                for (int ks = 0; ks < 4; ks++) wr_mma<BN>(acc, a[ks], db + 2 * ks);
                wg_commit();
                wg_wait<1>();
                wg_hold(acc);
#pragma unroll
                for (int ks = 0; ks < 4; ks++) wg_hold_r(b[ks]);
            };
            for (int kt = 0; kt < KT; kt += 2) {
                step(kt, a0, a1);
                if (kt + 1 < KT) step(kt + 1, a1, a0);
            }
            wg_wait<0>();
            wg_hold(acc);
#pragma unroll
            for (int ks = 0; ks < 4; ks++) wg_hold_r(a0[ks]), wg_hold_r(a1[ks]);
        }
    };
    // IL with 128 or 192 tokens: a row tile of at most 96 or 128 routed
    // rows (an expert's last, or all its rows at 4096 tokens of Kimi-K2.5:
    // 85 on average) runs the MMAs of its rows' part only.
    auto run = [&](auto PAIR) {
        if constexpr (IL && BN > 96) {
            const int rows = min(m1 - m0, BN);
            if (rows <= 96) mainloop(PAIR, wr_int<96>{});
            else if (BN > 128 && rows <= 128) mainloop(PAIR, wr_int<128>{});
            else mainloop(PAIR, wr_int<BN>{});
        } else {
            mainloop(PAIR, wr_int<BN>{});
        }
    };
    if constexpr (WK == MG_INT4) {
        if (pair) run(wr_bool<true>{});
        else run(wr_bool<false>{});
    } else {
        run(wr_bool<false>{});
    }

    // Epilogue: accumulator block j holds tokens m0 + 8j + 2c and +1 of
    // rows lr0 (d[4j], d[4j+1]) and lr0+8 (d[4j+2], d[4j+3]), rounded once
    // to bf16 (GLU: silu(gate)·up of column colOf(lr0)).
    // PMW with GLU: the output (the down projection's input) is stored
    // in the permuted order its k columns are read in: column n at
    // 32·(n/32) + pinv(n%32), where stored column l = 8c + j + 4e of a
    // block is read as fragment column pinv(l) = 16·(j/2) + 8·(j%2) + 2c +
    // e.
    // PMF: column n at 64·(n/64) + pinv(n%64), stored column l = 16c + 4s
    // + 2h + e read as fragment column 16s + 8h + 2c + e.
    auto pcol = [&](int n) {
        if (!GLU || n < 0) return n;
        if (PMW) return (n & ~31) | ((n & 2) << 3) | ((n & 1) << 3) | (((n >> 3) & 3) << 1) | ((n >> 2) & 1);
        if (PMF) return (n & ~63) | (((n >> 2) & 3) << 4) | (((n >> 1) & 1) << 3) | (((n >> 4) & 3) << 1) | (n & 1);
        return n;
    };
    const int nA = pcol(colOf(lr0)), nB = colOf(lr0 + 8);
    if constexpr (SE && !GLU) {
        // Staged (SE, down_proj with N % 8 == 0): the block's [BN, RB]
        // outputs go through shared memory (rows of RB + 8 bf16, so that a
        // warp's stores fall in distinct banks) and leave in 16-byte
        // chunks, a row's RB columns contiguous, instead of 2-byte stores
        // scattered over four rows per warp instruction. Measured (H200,
        // one run, two of each, staged against not): c on Kimi-K2.5's int4
        // MoE (BenchmarkKimiMoEInt4, two layers) at 8192 tokens 26.89 and
        // 26.89 ms against 26.99 and 28.81, at 4096 19.55-19.83 against
        // 20.48-20.64; on DeepSeek-V3's fp8 experts at 4096 tokens
        // (BenchmarkMoEGrouped) 8.31 against 8.59; p at 4096 17.38-17.50
        // against 17.25-17.31, so p keeps the direct stores.
        constexpr int SP = RB + 8;
        static_assert(BN * SP * 2 <= ST * STAGE, "the staging tile fits the stages");
        if (N % 8 == 0) {
            mg_wait<0>();
            __syncthreads();  // every warpgroup's MMAs have read their last stage
            bf16_t* stg = (bf16_t*)sm;
#pragma unroll
            for (int j = 0; j < BN / 8; j++)
#pragma unroll
                for (int t = 0; t < 2; t++) {
                    const int r = 8 * j + 2 * c + t;
                    stg[r * SP + lr0] = f32_to_bf16(acc[4 * j + t]);
                    stg[r * SP + lr0 + 8] = f32_to_bf16(acc[4 * j + 2 + t]);
                }
            __syncthreads();
            constexpr int CH = RB / 8;  // 16-byte chunks per row
            for (int i = tid; i < BN * CH; i += THREADS) {
                const int r = i / CH, q = i % CH, row = m0 + r, col = n0 + 8 * q;
                if (row < m1 && col < N)
                    *(uint4*)(out + (long long)row * N + col) = *(const uint4*)(stg + r * SP + 8 * q);
            }
            return;
        }
    }
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
#pragma unroll
        for (int t = 0; t < 2; t++) {
            const int row = m0 + 8 * j + 2 * c + t;
            if (row >= m1) continue;
            bf16_t* o = out + (long long)row * N;
            const float v0 = acc[4 * j + t], v1 = acc[4 * j + 2 + t];
            if (GLU) {
                if (nA >= 0) o[nA] = f32_to_bf16(v0 / (1.f + expf(-v0)) * v1);
            } else {
                if (nA >= 0) o[nA] = f32_to_bf16(v0);
                if (nB >= 0) o[nB] = f32_to_bf16(v1);
            }
        }
    }
}

// Tile configurations (WG warpgroups, BN tokens, stages, IL, PM: k
// permuted, SE: down_proj's outputs staged through shared memory), picked
// by the host (engine/backend/cuda/rank_moe_tiles.go, which holds what
// BenchmarkMoEGrouped measured): r 128 weight rows × 128 tokens, h 128 ×
// 64, double-buffered; c 192 × 192 interleaved (three warpgroups: the
// tokens' tile is read once for 192 weight rows); p 256 × 128 interleaved
// (four warpgroups, 127 registers of launch_bounds' 128; a row tile of at
// most 96 routed rows runs m64n96), for int4 at 64-112 routed rows per
// expert. Measured on an H200 (BenchmarkKimiMoEInt4, two layers at 4096
// tokens, 85 rows per expert, two sessions' runs, the packed form on
// each tile against the same checkpoint in bf16): p 18.14 and 18.50 ms
// against c's 21.27 and 22.11 (bf16 19.13 and 20.17): four warps per
// scheduler instead of three, and the tokens' tile read once for 256
// weight rows. At 8192 tokens (171 rows) p takes a second row tile for
// every expert, widening its weights twice: 35.5-36.4 against c's
// 27.6-29.1. Also tried and removed: 256 × 96 (q: four warpgroups, the
// last round of token copies partial; an expert past 96 rows, 12 % of
// them at 85 on average, takes a second tile) 19.5 ms at 4096 tokens and
// 36.1 at 8192; c and p with six stages (c 21.5 against 21.3 at 4096
// tokens, 29.4 against 27.6 at 8192; p 19.7 against 19.5 as q); and c and
// p persistent (one block per SM looping over the tiles, each tile's
// first copies issued before the last one's results are stored; fp8
// spilled 120-136 bytes at 168 registers): c 21.9 against 22.1 at 4096
// tokens and 31.7 against 29.1 at 8192, p 20.4 against 18.5, DeepSeek-V3
// fp8 at 128 rows c 9.9 against 8.2. Tried: c with 144
// tokens (three warpgroups, m64n144k16) ran DeepSeek-V3's fp8 experts on
// uniformly random top-8 ids faster than c (BenchmarkMoEGrouped: 128 rows
// per expert 8.2-8.5 ms against 8.6-9.5, 256 rows 16.1-16.5 against
// 18.6-18.7) but the benchmark model's own routing, whose experts get
// uneven rows, slower (scripts/bench/bench-deepseek.sh's fp8 prefill, two
// runs each, routed experts 9.8-10.2 ms against c's 9.3-9.7: an expert
// past 144 rows takes a second tile that widens its weights again); tiles
// of 96 tokens no faster than r for int4 at 85 rows (11.2 against 10.1),
// nor c with 128 tokens (the token tile's last round of copies partial):
// int4 at 85 rows 11.5 against r's 10.1, fp8 at 128 rows 11.7 against c's
// 9.5 (one run each).
// c with k tiles of 128 in three stages (half the barriers, scale loads
// and loop overhead per product) needed 168 registers and spilled 20-60
// bytes: int4 at 171 rows 14.6 ms against c's 12.9, fp8 at 128 rows 8.8
// against 8.1 (one run).
// Widening fp8 into f16 fragments (cvt.rn.f16x2.e4m3x2 and one f16x2
// product by the scale, half the instructions of mg_fp8x2) with f16
// tokens made c 6-8 % faster (128 rows 7.97 against 8.51, 256 rows 15.9
// against 17.4, an experiment that left out the tokens' conversion); not
// taken: the tokens and SiLU·mul's output would need an f16 copy with a
// power-of-two scale per row to keep bf16's range.
#define WR_CFG_r 2, 128, 4, false, false, false
#define WR_THREADS_r 256
#define WR_CFG_h 2, 64, 4, false, false, false
#define WR_THREADS_h 256
#define WR_CFG_c 3, 192, 4, true, true, true
#define WR_THREADS_c 384
#define WR_CFG_p 4, 128, 4, true, true, false
#define WR_THREADS_p 512

#define WR_INST(wn, WK, cfg, gn, GLU)                                                                        \
    extern "C" __global__ void __launch_bounds__(WR_THREADS_##cfg, 1) moe_wgra_##wn##_##gn##_##cfg(          \
        bf16_t* out, const bf16_t* x, const int* xidx, const unsigned long long* wptr, const int* offsets,   \
        const int* tiles, int nexp, int N, int K, long long scale_off, int qa, int qb, int qc) {             \
        moe_wgra<WR_CFG_##cfg, WK, GLU>(out, x, xidx, wptr, offsets, tiles, nexp, N, K, scale_off, qa, qb, qc); \
    }
#define WR_CFGS(wn, WK, gn, GLU)                                                    \
    WR_INST(wn, WK, r, gn, GLU) WR_INST(wn, WK, h, gn, GLU) WR_INST(wn, WK, c, gn, GLU) \
        WR_INST(wn, WK, p, gn, GLU)
#define WR_KINDS(gn, GLU) WR_CFGS(fp8, MG_FP8, gn, GLU) WR_CFGS(int4, MG_INT4, gn, GLU)
WR_KINDS(glu, true)
WR_KINDS(down, false)

// moe_wgra_permute_k32: out [rows, cols] = x with each row's columns
// permuted in blocks of 32, out[32b + f] = x[32b + pi(f)], pi(16s + 8h +
// 2c + e) = 8c + 2s + h + 4e (s, h, e in {0, 1}, c in 0..3): the order in
// which the int4 tiles with PM read their k columns, so that lane c's
// eight values of the block are stored word c (bf16; cols % 32 == 0,
// 16-byte aligned rows). One thread per block of 32.
extern "C" __global__ void moe_wgra_permute_k32(bf16_t* out, const bf16_t* x, long long blocks) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < blocks; i += (long long)gridDim.x * blockDim.x) {
        const uint4* src = (const uint4*)x + 4 * i;
        const uint4 v0 = src[0], v1 = src[1], v2 = src[2], v3 = src[3];
        const unsigned in[16] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w,
                                 v2.x, v2.y, v2.z, v2.w, v3.x, v3.y, v3.z, v3.w};
        unsigned o[16];
#pragma unroll
        for (int w = 0; w < 16; w++) {  // output word w: fragment columns 2w, 2w+1
            const int s = w >> 3, h = (w >> 2) & 1, c = w & 3;
            o[w] = __byte_perm(in[4 * c + s], in[4 * c + 2 + s], h ? 0x7632 : 0x5410);
        }
        uint4* dst = (uint4*)out + 4 * i;
        dst[0] = make_uint4(o[0], o[1], o[2], o[3]);
        dst[1] = make_uint4(o[4], o[5], o[6], o[7]);
        dst[2] = make_uint4(o[8], o[9], o[10], o[11]);
        dst[3] = make_uint4(o[12], o[13], o[14], o[15]);
    }
}

// moe_wgra_permute_k64: out [rows, cols] = x with each row's columns
// permuted in blocks of 64, out[64b + f] = x[64b + pi(f)], pi(16s + 8h +
// 2c + e) = 16c + 4s + 2h + e (s in 0..3, h, e in {0, 1}, c in 0..3): the
// order in which the fp8 tiles with PM read their k columns, so that lane
// c's sixteen values of a k tile are stored chunk c. Pairs of columns stay
// together: output word 8s + 4h + c is input word 8c + 2s + h. (bf16;
// cols % 64 == 0, 16-byte aligned rows.) One thread per block of 64.
extern "C" __global__ void moe_wgra_permute_k64(bf16_t* out, const bf16_t* x, long long blocks) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < blocks; i += (long long)gridDim.x * blockDim.x) {
        const uint4* src = (const uint4*)x + 8 * i;
        unsigned in[32];
#pragma unroll
        for (int q = 0; q < 8; q++) {
            const uint4 v = src[q];
            in[4 * q] = v.x, in[4 * q + 1] = v.y, in[4 * q + 2] = v.z, in[4 * q + 3] = v.w;
        }
        uint4* dst = (uint4*)out + 8 * i;
#pragma unroll
        for (int q = 0; q < 8; q++) {  // output words 4q..4q+3: s = q/2, h = q%2, c = 0..3
            const int s = q >> 1, h = q & 1;
            dst[q] = make_uint4(in[2 * s + h], in[8 + 2 * s + h], in[16 + 2 * s + h], in[24 + 2 * s + h]);
        }
    }
}
