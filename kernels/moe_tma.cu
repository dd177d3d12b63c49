// moe_tma.cu: the bf16 routed experts' grouped GEMM on wgmma with its
// operands brought in by the Tensor Memory Accelerator, the token tile
// shared by the two blocks of a cluster. Same contract as moe_wgmma.cu's
// y tile (read that file's and moe_gemm.cu's comments: rows permuted by
// expert, device-side offsets and row tiles of 192 from moe_gemm_tiles,
// 3 warpgroups of 64 rows × 256 weight rows, GLU's SiLU·mul in the
// epilogue), except that the input rows must already be in permuted order
// (TMA copies boxes of consecutive rows, it cannot gather): the down
// projection's input is, and the gate/up projection reads a copy of the
// tokens gathered by gather_rows first.
//
// Why: Nsight Compute found moe_wgmma.cu's y tile bound by L2 throughput
// (88 % of peak on DeepSeek-V3's gate/up GEMM at 4096 tokens) with every
// block copying its own token tile, so an expert's tokens cross L2 once
// per 256 weight rows (16 times for gate/up, 28 for down). Here the
// blocks of a cluster of two (__cluster_dims__, neighbours along the
// weight rows, same row tile) each load half of the token tile's 32-row
// boxes and multicast them into both blocks' shared memory, so the tokens
// cross L2 once per 512 weight rows. The weights (a different box for
// every block) come by TMA too, unicast.
//
// Pipeline: ST stages of { tokens [192, 64] bf16, weights [256, 64] bf16 },
// each K-major in the 128-byte swizzle (TMA's CU_TENSOR_MAP_SWIZZLE_128B
// writes exactly the layout wg_desc describes). Per stage a full
// mbarrier (one arrival: this block's expect_tx of the stage's bytes, its
// own and its partner's boxes; both blocks' TMA completions count down its
// transaction bytes) and an empty mbarrier (one arrival per warp of both
// blocks, 24, after the warp's MMAs on the stage are done: either block's
// next load into the stage writes into both). Thread 0 produces: it
// fills every stage first, then issues tile j into stage j%ST once both
// blocks have released tile j-ST, checking (mbarrier.test_wait) after
// its warp's MMAs of each tile and while it waits for a tile's data, so
// that it never holds its warpgroup up for the other block's warps.
// (A producer warpgroup of its own, with setmaxnreg moving registers to
// the multiplying ones, does not compile: ptxas allocates the 128
// accumulators against the 128 registers a thread of 512 has at launch.)
// No block barrier in the main loop.
//
// Rows: each warpgroup multiplies its 64 rows when any of them is routed
// (m0 + 64·wg < m1); a tile loads only the 32-row boxes that hold routed
// rows. Rows of a box past the expert's last row belong to the next
// expert (or lie past the buffer: TMA fills zeros); their accumulators
// are never stored. Weight rows past N are zero (TMA's out-of-bounds
// fill), and a block whose columns all lie past N (the grid's x is even)
// still loads its half of the tokens for its partner and stores nothing.
//
// Tensor maps (cuTensorMapEncodeTiled on the host, driver.TensorMapBF16):
// amap over the input [rows, K] with boxes of 64 × 32, wmaps[e] over
// expert e's weight [weight rows, K] (GLU: gate and up stacked, 2N rows;
// down: N rows) with boxes of 64 × 128. They live in device memory,
// written by copies from the host, so each is fenced into the tensor-map
// proxy (fence.proxy.tensormap::generic.acquire.sys, PTX ISA 8.3) before
// its first use.
//
// build: sm_90a
// build: ptx 8.3
#include "common.cuh"
#include "moe_widen.cuh"
#include "wgmma.cuh"

#define MT_BM 192                         // routed rows per tile (3 warpgroups of 64)
#define MT_BN 256                         // weight rows per block
#define MT_ST 4                           // pipeline stages
#define MT_BOX 32                         // token rows per TMA box
#define MT_A_BYTES (MT_BM * 128)          // a stage's token tile
#define MT_W_BYTES (MT_BN * 128)          // a stage's weight tile
#define MT_STAGE (MT_A_BYTES + MT_W_BYTES)  // 57344, a multiple of 1024
#define MT_WARPS (2 * MT_BM / 16)         // arrivals on an empty barrier: every warp (of 16 rows) of both blocks

// mt_map is a CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct __align__(64) mt_map {
    unsigned long long v[16];
};

__device__ __forceinline__ unsigned mt_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
// mt_cluster_sync: every thread of both blocks arrives (release) and waits
// (acquire).
__device__ __forceinline__ void mt_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void mt_bar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// mt_expect: one arrival on bar that also adds bytes to the transaction
// count its phase waits for.
__device__ __forceinline__ void mt_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// mt_arrive: one arrival on the barrier at this block's shared address
// bar in block cta of the cluster (release at cluster scope).
__device__ __forceinline__ void mt_arrive(unsigned bar, unsigned cta) {
    asm volatile(
        "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
        "r"(cta)
        : "memory");
}
// mt_wait spins until phase parity of bar has completed (acquire at
// cluster scope: the partner's releases and TMA writes are visible).
__device__ __forceinline__ void mt_wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    }
}
// mt_test: whether phase parity of bar has completed, without waiting
// (acquire at cluster scope when it has).
__device__ __forceinline__ bool mt_test(unsigned bar, unsigned parity) {
    unsigned done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    return done;
}
// mt_load: TMA box at (c0, c1) = (k, row) of map into this block's shared
// dst, completing on bar.
__device__ __forceinline__ void mt_load(unsigned dst, const mt_map* map, int c0, int c1, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
        "l"(map), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}
// mt_load_mc: mt_load into the same offset of both blocks' shared memory,
// completing on the barrier at bar's offset in each.
__device__ __forceinline__ void mt_load_mc(unsigned dst, const mt_map* map, int c0, int c1, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
        "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"((unsigned short)3)
        : "memory");
}
// mt_fence_map: the tensor map at map, written to device memory by a copy
// from the host, is acquired by the tensor-map proxy.
__device__ __forceinline__ void mt_fence_map(const mt_map* map) {
    asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;\n" ::"l"(map) : "memory");
}

// moe_tma: see the file comment. out [rows, N] bf16; N output columns
// (GLU: the gate's rows, the up rows start at N in wmaps[e]), K input
// columns.
template <bool GLU>
__device__ __forceinline__ void moe_tma(bf16_t* out, const mt_map* amap, const mt_map* wmaps, const int* offsets,
                                        const int* tiles, int nexp, int N, int K) {
    constexpr int PR = GLU ? MT_BN / 2 : MT_BN;  // output columns per block
    extern __shared__ unsigned char mt_smem[];
    const unsigned raw = mg_smem_addr(mt_smem), base = (raw + 1023u) & ~1023u;
    const unsigned bars = base + MT_ST * MT_STAGE;  // full[s] at bars + 8s, empty[s] at bars + 8(ST + s)

    // Work items: (row tile, pair of column blocks), the pairs of a row
    // tile consecutive; cluster c of C takes items c, c + C, ... and runs
    // their k tiles as one stream through the stages (global k tile g).
    const int ntiles = tiles[nexp], KT = (K + 63) / 64;
    const int npair = ((N + PR - 1) / PR + 1) / 2, C = gridDim.x / 2, c = blockIdx.x / 2;
    const int items = ntiles * npair, mine = items > c ? (items - c + C - 1) / C : 0;
    const int total = mine * KT;  // k tiles this cluster streams
    const unsigned rank = mt_rank();
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, warp = (tid >> 5) & 3;
    // item i of this cluster: expert e, rows [m0, m1), the row count in the
    // tile, and this block's first output column n0.
    struct item_t {
        int e, m0, m1, rows, n0;
    };
    auto item = [&](int i) {
        const int it = c + i * C, tile = it / npair, pair = it % npair;
        item_t r;
        r.e = mg_tile_expert(tiles, nexp, tile);
        r.m0 = offsets[r.e] + (tile - tiles[r.e]) * MT_BM;
        r.m1 = offsets[r.e + 1];
        r.rows = min(r.m1 - r.m0, MT_BM);
        r.n0 = (2 * pair + (int)rank) * PR;
        return r;
    };

    if (tid == 0) {
        for (int s = 0; s < MT_ST; s++) {
            mt_bar_init(bars + 8 * s, 1);
            mt_bar_init(bars + 8 * (MT_ST + s), MT_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        mt_fence_map(amap);
    }
    mt_cluster_sync();  // both blocks' barriers exist before either loads into the other

    // Thread 0 produces: it fills every stage, then issues global k tile g
    // into stage g%ST once both blocks have released tile g-ST, polling
    // (test_wait) after its warp's MMAs of each tile and while it waits
    // for a tile's data, so that it never holds its warpgroup up for the
    // other block's warps.
    int next = 0, pi = 0, pkt = 0;  // thread 0: the next global k tile to issue, its item and k tile
    item_t pit = total ? item(0) : item_t{};
    auto issue = [&]() {
        const unsigned st = base + (next % MT_ST) * MT_STAGE, full = bars + 8 * (next % MT_ST);
        const int k0 = pkt * 64, boxes = (pit.rows + MT_BOX - 1) / MT_BOX;
        const mt_map* wm = wmaps + pit.e;
        if (pkt == 0) mt_fence_map(wm);
        mt_expect(full, boxes * MT_BOX * 128 + MT_W_BYTES);
        for (int b = rank; b < boxes; b += 2) mt_load_mc(st + b * MT_BOX * 128, amap, k0, pit.m0 + b * MT_BOX, full);
        mt_load(st + MT_A_BYTES, wm, k0, pit.n0, full);
        mt_load(st + MT_A_BYTES + MT_W_BYTES / 2, wm, k0, GLU ? N + pit.n0 : pit.n0 + MT_BN / 2, full);
        next++;
        if (++pkt == KT && next < total) {
            pkt = 0;
            pit = item(++pi);
        }
    };
    auto refill = [&]() {
        while (next < total && mt_test(bars + 8 * (MT_ST + next % MT_ST), ((next - MT_ST) / MT_ST) & 1)) issue();
    };
    if (tid == 0)
        while (next < min(MT_ST, total)) issue();

    float acc[MT_BN / 2];
    for (int i = 0, g = 0; i < mine; i++) {
        const item_t w = item(i);
        const bool active = 64 * wg < w.rows;  // this warpgroup's 64 rows hold a routed row
#pragma unroll
        for (int a = 0; a < MT_BN / 2; a++) acc[a] = 0.f;
        for (int kt = 0; kt < KT; kt++, g++) {
            const int s = g % MT_ST;
            if (tid < 32) {  // warp 0: thread 0 refills while the tile is on its way
                while (!mt_test(bars + 8 * s, (g / MT_ST) & 1))
                    if (tid == 0) refill();
                __syncwarp();
            } else {
                mt_wait(bars + 8 * s, (g / MT_ST) & 1);
            }
            if (active) {
                const unsigned long long da = wg_desc(base + s * MT_STAGE + wg * 64 * 128);
                const unsigned long long db = wg_desc(base + s * MT_STAGE + MT_A_BYTES);
                wg_hold(acc);
                wg_fence();
#pragma unroll
                for (int kk = 0; kk < 4; kk++) wg_mma_n256(acc, da + 2 * kk, db + 2 * kk);
                wg_commit();
                wg_wait<1>();
                wg_hold(acc);
            }
            // This warp's MMAs of tile g-1 are done: release its stage to the
            // producers of both blocks, if either loads into it again.
            if (g >= 1 && g - 1 + MT_ST < total && lane == 0) {
                const unsigned empty = bars + 8 * (MT_ST + (g - 1) % MT_ST);
                mt_arrive(empty, 0);
                mt_arrive(empty, 1);
            }
            if (tid == 0) refill();
        }
        wg_wait<0>();
        wg_hold(acc);
        if (!active) continue;
        // Epilogue as moe_wgmma.cu's: n8 block j of this thread's rows
        // (GLU: gate block j, up block j + BN/16), rounded once to bf16.
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = w.m0 + 64 * wg + 16 * warp + (lane >> 2) + 8 * h;
            if (row >= w.m1) continue;
            bf16_t* o = out + (long long)row * N;
#pragma unroll
            for (int j = 0; j < PR / 8; j++) {
                const int col = w.n0 + j * 8 + (lane & 3) * 2;
                float v[2];
#pragma unroll
                for (int c2 = 0; c2 < 2; c2++) {
                    v[c2] = acc[4 * j + 2 * h + c2];
                    if (GLU) {
                        float gt = v[c2], u = acc[4 * (j + MT_BN / 16) + 2 * h + c2];
                        v[c2] = gt / (1.f + expf(-gt)) * u;
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
    mt_cluster_sync();  // neither block leaves while its partner may still write into it
}

#define MT_INST(gn, GLU)                                                                                              \
    extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(3 * 128, 1)                                \
        moe_tma_bf16_##gn(bf16_t* out, const mt_map* amap, const mt_map* wmaps, const int* offsets, const int* tiles, \
                          int nexp, int N, int K) {                                                                   \
        moe_tma<GLU>(out, amap, wmaps, offsets, tiles, nexp, N, K);                                                   \
    }
MT_INST(glu, true)
MT_INST(down, false)
