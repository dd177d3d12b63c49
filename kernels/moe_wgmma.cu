// moe_wgmma.cu: the routed experts' grouped GEMM on Hopper's warpgroup
// MMAs (wgmma.mma_async, sm_90a), for prefill-sized batches: the same
// contract as moe_gemm.cu (read that file's comment: rows permuted by
// expert with device-side offsets and row-tile starts from moe_gemm_tiles,
// weights read as stored in bf16, fp8 e4m3 with f32 block scales or packed
// int4 and widened to bf16 in shared memory with each value rounded once,
// the gather of the tokens and SiLU·mul fused into the gate/up GEMM), with
// the products on wgmma instead of mma.sync: one warpgroup issues a
// 64 × BN × 16 product from two shared-memory descriptors, asynchronously,
// so the next k tile's widening overlaps the tensor cores' work.
//
// build: sm_90a
// (scripts/build-kernels.sh compiles this file like the others, with CUDA
// 11.8's nvcc for compute_90, and then marks the PTX .version 8.0 /
// .target sm_90a: wgmma exists only on sm_90a, CUDA 11.8's front end
// passes the inline assembly through unchanged, and the driver JIT-
// compiles the PTX on an H100/H200. A device of another compute capability
// refuses the module; engine/backend/cuda uses these kernels only on 9.0.)
//
// Block: WG warpgroups (128 threads each), BM = 64·WG routed rows (each
// warpgroup owns 64; all load the rows and widen the weight tile, the
// first two load it) × BN weight rows (GLU: BN/2 gate + BN/2 up rows of the same
// columns), k tiles of 64. Shared memory, 1024-byte aligned:
//   ST stages of { A: [BM, 64] bf16, W: the raw weight tile }, then, for
//   quantized weights, two widened [BN, 64] bf16 tiles (double buffered:
//   one is read by the k tile in flight while the next is written).
// Every [rows, 64] bf16 tile lies K-major in the 128-byte swizzle
// (row r's 16-byte chunk c at r·128 + ((c ^ r%8)·16)), the layout wgmma's
// descriptors call SWIZZLE_128B: no bank conflicts for the cp.async
// writes, the widening writes or the tensor cores' reads. A descriptor
// advances by 32 bytes per k16 step inside the 128-byte row.
//
// Pipeline per k tile kt (all threads load, each warpgroup multiplies):
// wait for k tile kt's copies, fence them to the async proxy, barrier
// (after which every warpgroup's product of tile kt-2 is done, so its
// stage and widened buffer are free); issue the copies of tile kt+ST-2;
// widen tile kt (quantized weights); fence, barrier; issue four wgmmas
// (k16 steps) and wait until at most this group is in flight. Rows of a
// warpgroup's half past the expert's last row skip their products.
//
// Requirements (the host checks them): as moe_gemm.cu's (copies are whole
// 16-byte chunks, zero-filled past K).
#include "common.cuh"
#include "moe_widen.cuh"
#include "wgmma.cuh"

// wg_mma_n256: d[64 × 256] += A[64 × 16] · B[256 × 16]ᵀ for one warpgroup, A and
// B K-major in shared memory (descriptors da, db), f32 accumulators in the
// m64n256 fragment: thread t holds, for n8 block j, d[4j..4j+3] = rows
// 16·(t/32) + (t%32)/4 and +8, columns 8j + 2·(t%4) and +1.
__device__ __forceinline__ void wg_mma_n256(float (&d)[128], unsigned long long da, unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 0;\n}\n"
        : WG_D32(0), WG_D32(32), WG_D32(64), WG_D32(96)
        : "l"(da), "l"(db), "r"(1)
        : "memory");
}

// moe_wgmma: see the file comment. Arguments as moe_gemm.cu's moe_gemm.
template <int WG, int BN, int ST, int WK, bool GLU>
__device__ __forceinline__ void moe_wgmma(bf16_t* out, const bf16_t* x, const int* xidx, const unsigned long long* wptr,
                                          const int* offsets, const int* tiles, int nexp, int N, int K,
                                          long long scale_off, int qa, int qb, int qc) {
    constexpr int BK = MG_BK, BM = 64 * WG, THREADS = 128 * WG;
    constexpr int LT = THREADS < 256 ? THREADS : 256;  // threads that load and widen the weight tile
    constexpr int P = GLU ? 2 : 1, PR = BN / P;  // PR: weight rows per part
    constexpr int NACC = BN / 2;                 // accumulators per thread (64·BN / 128)
    constexpr int A_BYTES = BM * 128, W_BYTES = BN * 128;
    constexpr int R_BYTES = WK == MG_BF16 ? W_BYTES : WK == MG_FP8 ? BN * 64 : BN * 32;  // raw weight tile
    constexpr int STAGE = A_BYTES + R_BYTES;
    constexpr int R_CPR = WK == MG_BF16 ? 8 : WK == MG_FP8 ? 4 : 2;  // 16-byte copies per weight row
    constexpr int A_ITERS = BM * 8 / THREADS, B_ITERS = BN * R_CPR / LT;
    // Widening: every thread, units of 8 k of one row; with three
    // warpgroups a unit's part depends on the thread and the last round
    // covers only part of the tile (mg_units' TP).
    constexpr int CV_ROWS = THREADS / 8, CV_ITERS = (BN + CV_ROWS - 1) / CV_ROWS;
    constexpr bool CV_TP = PR % CV_ROWS != 0 || CV_ITERS * CV_ROWS != BN;
    static_assert(STAGE % 1024 == 0 && A_ITERS * THREADS == BM * 8 && B_ITERS * LT == BN * R_CPR, "tile");
    static_assert(ST >= 3, "the pipeline keeps one stage in the MMAs and one being read");
    static_assert(BN == 256, "one wg_mma_n256 per warpgroup and k16 step");

    extern __shared__ unsigned char wg_smem[];
    const unsigned raw = mg_smem_addr(wg_smem), base = (raw + 1023u) & ~1023u;
    unsigned char* sm = wg_smem + (base - raw);  // 1024-byte aligned (the host adds 1 KiB)

    const int tile = blockIdx.y;
    if (tile >= tiles[nexp]) return;
    const int e = mg_tile_expert(tiles, nexp, tile);
    const int m0 = offsets[e] + (tile - tiles[e]) * BM, m1 = offsets[e + 1];
    const int n0 = blockIdx.x * PR;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, warp = (tid >> 5) & 3;
    const int KT = (K + BK - 1) / BK;
    const bool active = m0 + 64 * wg < m1;  // this warpgroup's 64 rows hold a routed row
    const unsigned char* wb0 = (const unsigned char*)wptr[(long long)e * P];
    const unsigned char* wb1 = GLU ? (const unsigned char*)wptr[(long long)e * P + 1] : wb0;

    // Copies: A row tid/8 + i·THREADS/8, chunk tid%8; weight row
    // tid/R_CPR + i·RS, chunk tid%R_CPR (the first LT threads). Per copy
    // the thread keeps 32-bit element offsets (A) and two row pointers
    // with a validity mask (weights), not a 64-bit pointer each: with 128
    // accumulators a thread of the three-warpgroup tile has 168 registers,
    // and pointers per copy made ptxas spill inside the k loop.
    const int ac = tid & 7;
    unsigned aoff[A_ITERS];  // x element of the row's chunk (the host keeps rows·K < 2³²), ~0u past the expert
#pragma unroll
    for (int i = 0; i < A_ITERS; i++) {
        int m = m0 + (tid >> 3) + i * (THREADS / 8);
        aoff[i] = m < m1 ? (unsigned)(xidx ? xidx[m] : m) * (unsigned)K + ac * 8 : ~0u;
    }
    constexpr int RS = LT / R_CPR, IPP = PR / RS;  // rows between a thread's copies; copies per part
    static_assert(PR % RS == 0 && B_ITERS % IPP == 0, "a copy's part must not depend on the thread");
    const bool wload = tid < LT;  // this thread loads weight-tile chunks
    const int bc = tid % R_CPR, rr = tid / R_CPR;
    const long long rowBytes = WK == MG_BF16 ? 2LL * K : WK == MG_FP8 ? (long long)K : K / 2;
    const long long wo = (long long)(n0 + rr) * rowBytes + bc * 16, strideB = RS * rowBytes;
    const unsigned char* const wbase0 = wb0 + wo;
    const unsigned char* const wbase1 = wb1 + wo;
    unsigned wvalid = 0;  // bit i: copy i's weight row is below N
#pragma unroll
    for (int i = 0; i < B_ITERS; i++)
        if (wload && n0 + rr + (i % IPP) * RS < N) wvalid |= 1u << i;
    auto load = [&](int s, int kt) {
        unsigned char* st = sm + s * STAGE;
        const int k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < A_ITERS; i++) {
            int r = (tid >> 3) + i * (THREADS / 8);
            bool ok = aoff[i] != ~0u && k0 + ac * 8 < K;
            mg_cp16(st + r * 128 + ((ac ^ (r & 7)) << 4), ok ? (const void*)(x + aoff[i] + k0) : (const void*)x, ok);
        }
        if (!wload) return;
#pragma unroll
        for (int i = 0; i < B_ITERS; i++) {
            int r = rr + i * RS;
            long long kb = WK == MG_BF16 ? 2LL * k0 : WK == MG_FP8 ? k0 : k0 / 2;
            int per = WK == MG_BF16 ? 8 : WK == MG_FP8 ? 16 : 32;  // k per copy
            bool ok = (wvalid >> i & 1) && k0 + bc * per < K;
            const unsigned char* src = (i / IPP ? wbase1 : wbase0) + (i % IPP) * strideB + kb;
            int dst = WK == MG_BF16 ? r * 128 + ((bc ^ (r & 7)) << 4) : r * (R_BYTES / BN) + bc * 16;
            mg_cp16(st + A_BYTES + dst, ok ? (const void*)src : (const void*)x, ok);
        }
    };

    // Widening (quantized weights, mg_units): rows tid/8 + i·CV_ROWS at k
    // offset 8·(tid%8), into the swizzled layout (chunk tid%8 of the row).
    const mg_units<WK, CV_ITERS, PR, CV_TP> units(tid >> 3, CV_ROWS, (tid & 7) * 8, n0, N, qa, qc, wb0, wb1, scale_off, BN);
    auto widen = [&](int s, unsigned char* dst, const unsigned (&sc)[CV_ITERS], bool f32s) {  // f32s: a constant at each call
#pragma unroll
        for (int i = 0; i < CV_ITERS; i++) {
            const int r = (tid >> 3) + i * CV_ROWS;
            if (!CV_TP || r < BN)
                *(uint4*)(dst + r * 128 + (((tid & 7) ^ (r & 7)) << 4)) = units.widen(sm + s * STAGE + A_BYTES, i, sc[i], f32s);
        }
    };

    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; i++) acc[i] = 0.f;

#pragma unroll
    for (int s = 0; s < ST - 2; s++) {
        if (s < KT) load(s, s);
        mg_commit();
    }
    const bool f32s = WK == MG_INT4 && qb;  // int4 with f32 scales
    unsigned sc[CV_ITERS];
    if (WK != MG_BF16) {
        if (f32s) units.scales(0, K, qa, qb, sc, true);
        else units.scales(0, K, qa, qb, sc, false);
    }
    for (int kt = 0; kt < KT; kt++) {
        mg_wait<ST - 3>();
        wg_proxy_fence();
        __syncthreads();
        if (kt + ST - 2 < KT) load((kt + ST - 2) % ST, kt + ST - 2);
        mg_commit();
        const int s = kt % ST;
        unsigned char* wt = sm + s * STAGE + A_BYTES;
        if (WK != MG_BF16) {
            wt = sm + ST * STAGE + (kt & 1) * W_BYTES;
            if (f32s) {  // each branch compiles one scale form
                widen(s, wt, sc, true);
                if (kt + 1 < KT) units.scales(kt + 1, K, qa, qb, sc, true);
            } else {
                widen(s, wt, sc, false);
                if (kt + 1 < KT) units.scales(kt + 1, K, qa, qb, sc, false);
            }
            wg_proxy_fence();
            __syncthreads();
        }
        if (active) {
            const unsigned long long da = wg_desc(base + s * STAGE + wg * 64 * 128);
            const unsigned long long db = wg_desc(base + (unsigned)(wt - sm));
            wg_hold(acc);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) wg_mma_n256(acc, da + 2 * kk, db + 2 * kk);
            wg_commit();
            wg_wait<1>();
            wg_hold(acc);
        }
    }
    wg_wait<0>();
    wg_hold(acc);
    if (!active) return;

    // Epilogue: n8 block j of this thread's rows (GLU: gate block j, up
    // block j + BN/16 of the same columns), rounded once to bf16.
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int row = m0 + 64 * wg + 16 * warp + (lane >> 2) + 8 * h;
        if (row >= m1) continue;
        bf16_t* o = out + (long long)row * N;
#pragma unroll
        for (int j = 0; j < BN / 8 / P; j++) {
            const int col = n0 + j * 8 + (lane & 3) * 2;
            float v[2];
#pragma unroll
            for (int c = 0; c < 2; c++) {
                v[c] = acc[4 * j + 2 * h + c];
                if (GLU) {
                    float g = v[c], u = acc[4 * (j + BN / 16) + 2 * h + c];
                    v[c] = g / (1.f + expf(-g)) * u;
                }
            }
            if (col + 1 < N && (N & 1) == 0) {
                *(unsigned*)(o + col) = mg_pack(v[0], v[1]);
            } else {
                if (col < N) o[col] = f32_to_bf16(v[0]);
                if (col + 1 < N) o[col + 1] = f32_to_bf16(v[1]);
            }
        }
    }
}

// Tile configurations (WG warpgroups, BN, stages), picked by the host
// (engine/backend/cuda/rank_moe_tiles.go; rank_moe_grouped.go holds the
// shared memory each needs): w 128 × 256 (BenchmarkMoEGrouped measured 128 × 128 and
// 64 × 256 slower at every size); y 192 × 256, three warpgroups: an
// expert of 129 to 192 routed rows (DeepSeek-V3 at 4096 tokens routes 128
// on average) is one row tile instead of two, so its weights are read from
// memory and cross L2 once instead of twice. L2 throughput is what bounds
// the bf16 GEMMs: Nsight Compute on the gate/up GEMM at 4096 tokens
// measured L2 at 93 % of peak on w (5.50 ms, tensor pipe 58 %) and 88 %
// on y (4.63 ms, tensor pipe 71 %). A y whose blocks ran in clusters of
// two along the weight rows, each copying half of the routed rows' tile
// with cp.async and the other half from its partner's shared memory
// (distributed shared memory, a cluster barrier per k tile), so that the
// rows cross L2 once per two blocks, was correct and much slower
// (DeepSeek-V3 bf16 experts at 4096 tokens 13.1 ms against y's 7.2, at
// 8192 22.3 against 13.1): the cluster barrier per k tile stalls both
// blocks; TMA multicast with per-stage mbarriers is what would avoid it.
// That was built next (commits 0fc76bf and f385432: kernels/moe_tma.cu,
// y's tile with both operands brought by TMA from tensor maps kept in
// device memory, one per expert's weight and one over the input in
// permuted order (gate/up's tokens gathered into a [slots, hidden] copy
// first), the token tile in 32-row boxes multicast to both blocks of a
// cluster of two neighbours along the weight rows, a full and an empty
// mbarrier per stage, thread 0 issuing): correct on every case of
// TestRankGroupedKernelMatchesCPU, and slower in every form.
// BenchmarkMoEGrouped, DeepSeek-V3 bf16 experts at 4096 tokens, ms per
// layer, y / down_proj on TMA (gate/up on y) / both on TMA: a grid of row
// tiles × column pairs 8.16 / 8.70 / 9.94; with the producer polling
// (mbarrier.test_wait) instead of blocking its warpgroup 8.13 / 9.14 /
// 10.74; persistent (a cluster per two SMs looping over the items) 7.93
// / 9.27 / 11.30. In the whole prefill (bench-deepseek.sh with
// HSDB_MOE_TILE) routed_experts took 7.47 on y against 9.83 both on TMA,
// and 7.62 / 8.75 / 10.52 with the polling producer. The forms were
// timed in that order in one process, and y's kernel timed four times so
// (the tensor maps then failed to encode and every form fell back to y)
// measured 7.24, 8.16, 8.20 and 8.32: the down-only form's deficit is
// about that drift, the gate/up form's is not. A producer warpgroup of its own
// (setmaxnreg moving registers to the multiplying ones) does not compile:
// ptxas allocates the 128 accumulators against the 128 registers a
// thread of a 512-thread block has at launch. Not profiled (the device
// budget ended there); the suspects are the tensor maps read from device
// memory behind a system-scope fence.proxy.tensormap, the gather's extra
// pass over the tokens, and two blocks paced by the slower of the pair.
#define WG_CFG_w 2, 256, 4
#define WG_THREADS_w 256
#define WG_CFG_y 3, 256, 4
#define WG_THREADS_y 384

#define WG_INST(wn, WK, cfg, gn, GLU)                                                                          \
    extern "C" __global__ void __launch_bounds__(WG_THREADS_##cfg, 1) moe_wgmma_##wn##_##gn##_##cfg(          \
        bf16_t* out, const bf16_t* x, const int* xidx, const unsigned long long* wptr, const int* offsets,     \
        const int* tiles, int nexp, int N, int K, long long scale_off, int qa, int qb, int qc) {               \
        moe_wgmma<WG_CFG_##cfg, WK, GLU>(out, x, xidx, wptr, offsets, tiles, nexp, N, K, scale_off, qa, qb, qc); \
    }
#define WG_CFGS(wn, WK, gn, GLU) WG_INST(wn, WK, w, gn, GLU) WG_INST(wn, WK, y, gn, GLU)
#define WG_KINDS(gn, GLU) WG_CFGS(bf16, MG_BF16, gn, GLU) WG_CFGS(fp8, MG_FP8, gn, GLU) WG_CFGS(int4, MG_INT4, gn, GLU)
WG_KINDS(glu, true)
WG_KINDS(down, false)
