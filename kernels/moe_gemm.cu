// moe_gemm.cu: the routed experts' grouped GEMM of one MoE layer in one
// launch per projection, reading the experts' row offsets on the device
// (no host round trip for the per-expert counts) and the expert weights in
// the form they are stored in: bf16, fp8 e4m3 with f32 block scales
// (DeepSeek-V3's weight_scale_inv), or compressed-tensors pack-quantized
// int4 (Kimi-K2's weight_packed + bf16 group scales). Quantized weights are
// widened to bf16 in shared memory, tile by tile, never into a global
// scratch. Activations bf16, products on the tensor cores (mma.sync
// m16n8k16, bf16 in, f32 accumulate) fed by ldmatrix from a cp.async
// multi-stage pipeline (the Ampere GEMM structure of CUTLASS's
// gemm::warp::MmaTensorOp and vLLM's fused_moe Triton kernel, written here
// in CUDA; the expert lookup per row tile follows fused_moe's
// expert_ids-per-block idea, computed by moe_gemm_tiles).
//
// Rows. The routed slots are permuted by expert (moe_route.cu's moe_count
// and moe_place): expert e owns rows [offsets[e], offsets[e+1]) of the
// permuted matrix. moe_gemm_tiles turns the counts into offsets and into
// tile starts tiles[e] (Σ_{j<e} ceil(counts[j]/BM)); block row blockIdx.y
// of a GEMM is row tile blockIdx.y of the expert e with tiles[e] ≤
// blockIdx.y < tiles[e+1] (blocks past tiles[n] return at once, so the grid
// is sized by an upper bound the host knows without the counts).
//
// Weights. wptr [n·P] holds each expert's weight addresses (P = 2 for the
// fused gate/up projection: gate_proj then up_proj, each [N, K]; P = 1 for
// down_proj [N, K]); a quantized weight's scales lie scale_off bytes after
// its data (engine/backend/cuda rank_fp8.go / rank_int4.go layouts):
//   bf16: [N, K] bf16
//   fp8:  [N, K] float8_e4m3fn, scales [ceil(N/qa), qc] f32, block qa × qb
//         (qc = ceil(K/qb)); w = f32(q)·scale rounded once to bf16, as
//         fp8_dequant_batch (fp8.cu) writes it
//   int4: [N, K/8] uint32 (column 8w+i in bits [4i, 4i+4), q+8), scales
//         [N, qc] bf16 (qb = 0) or f32 (qb = 1), group qa;
//         w = (q)·scale rounded once to bf16, as int4_dequant (int4.cu)
// so each product equals the one a bf16 GEMM on the weights dequantized to
// bf16 computes.
//
// Outputs. Gate/up (GLU): out [rows, N] = silu(x·gateᵀ)·(x·upᵀ), the two
// f32 sums combined in the epilogue (elementwise.cu's silu_mul formula,
// without rounding the two halves first) and rounded once; each block's
// B tile holds BN/2 gate rows and the same BN/2 up rows, so one thread owns
// a gate and an up sum of the same column. Down: out [rows, N] = x·wᵀ.
// x rows: xidx[r] (the gathered token of permuted row r) when xidx is not
// null, else r: the gate/up GEMM reads the layer input in token order
// directly (the gather is fused).
//
// Requirements (the host checks them and uses the cuBLAS path otherwise):
// K % 8 == 0 (bf16), K % 16 == 0 and qb % 8 == 0 (fp8), K % 32 == 0 and
// qa % 8 == 0 (int4); 16-byte aligned x, weights and outputs.
#include "common.cuh"
#include "moe_widen.cuh"

#define MG_LDS (MG_BK + 8)  // smem row pitch in bf16: 144 bytes, ldmatrix without bank conflicts

__device__ __forceinline__ void mg_ldm_x4(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(mg_smem_addr(p)));
}
__device__ __forceinline__ void mg_mma(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// moe_gemm_tiles: one warp. offsets [n+1] = exclusive prefix sums of
// counts [n] (offsets[n] = the routed rows), tiles [n+1] = exclusive
// prefix sums of ceil(counts[e]/bm).
extern "C" __global__ void moe_gemm_tiles(const int* counts, int n, int bm, int* offsets, int* tiles) {
    const int lane = threadIdx.x;
    const int per = (n + 31) / 32, b = min(n, lane * per), e = min(n, b + per);
    int rs = 0, ts = 0;
    for (int i = b; i < e; i++) {
        int c = counts[i];
        rs += c;
        ts += (c + bm - 1) / bm;
    }
    int ri = rs, ti = ts;
    for (int o = 1; o < 32; o <<= 1) {
        int r2 = __shfl_up_sync(0xffffffffu, ri, o), t2 = __shfl_up_sync(0xffffffffu, ti, o);
        if (lane >= o) ri += r2, ti += t2;
    }
    int r = ri - rs, t = ti - ts;
    for (int i = b; i < e; i++) {
        int c = counts[i];
        offsets[i] = r;
        tiles[i] = t;
        r += c;
        t += (c + bm - 1) / bm;
    }
    if (lane == 31) offsets[n] = ri, tiles[n] = ti;
}

// moe_gemm: see the file comment. BM × BN output tile per block (BN weight
// rows: BN/2 gate + BN/2 up rows with GLU), warps of WM × WN, ST stages of
// MG_BK columns of K.
template <int BM, int BN, int WM, int WN, int ST, int WK, bool GLU>
__device__ __forceinline__ void moe_gemm(bf16_t* out, const bf16_t* x, const int* xidx, const unsigned long long* wptr,
                                         const int* offsets, const int* tiles, int nexp, int N, int K,
                                         long long scale_off, int qa, int qb, int qc) {
    constexpr int BK = MG_BK, LDS = MG_LDS;
    constexpr int WARPS_N = BN / WN, THREADS = 32 * (BM / WM) * WARPS_N;
    constexpr int MT = WM / 16, NT = WN / 8, P = GLU ? 2 : 1, PR = BN / P;  // PR: weight rows per part
    constexpr int A_STAGE = BM * LDS * 2;                                   // bytes
    constexpr int B_STAGE = WK == MG_BF16 ? BN * LDS * 2 : WK == MG_FP8 ? BN * BK : BN * BK / 2;
    constexpr int B_CHUNK = WK == MG_BF16 ? 8 : WK == MG_FP8 ? 16 : 32;  // k values per 16-byte copy
    constexpr int B_CPR = BK / B_CHUNK;                                  // copies per weight row
    constexpr int A_ITERS = BM * (BK / 8) / THREADS, B_ITERS = BN * B_CPR / THREADS;
    constexpr int CV_ITERS = BN * (BK / 8) / THREADS;
    static_assert(A_ITERS * THREADS == BM * (BK / 8) && B_ITERS * THREADS == BN * B_CPR, "tile/thread mismatch");
    static_assert(CV_ITERS * THREADS == BN * (BK / 8) && NT % (2 * P) == 0, "tile/thread mismatch");
    extern __shared__ __align__(16) unsigned char mg_smem[];
    unsigned char* As = mg_smem;
    unsigned char* Bs = mg_smem + ST * A_STAGE;
    bf16_t* Bc = (bf16_t*)(Bs + ST * B_STAGE);  // the widened B tile (quantized weights)

    const int tile = blockIdx.y;
    if (tile >= tiles[nexp]) return;
    const int e = mg_tile_expert(tiles, nexp, tile);
    const int m0 = offsets[e] + (tile - tiles[e]) * BM, m1 = offsets[e + 1];
    const int n0 = blockIdx.x * PR;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int KT = (K + BK - 1) / BK;
    // The expert's weight (gate and up with GLU), selected by value:
    // indexing a two-element array by a computed part would put it in local
    // memory.
    const unsigned char* wb0 = (const unsigned char*)wptr[(long long)e * P];
    const unsigned char* wb1 = GLU ? (const unsigned char*)wptr[(long long)e * P + 1] : wb0;

    // This thread's A rows (8 bf16 of one row per copy) and B rows.
    const int akc = (tid % (BK / 8)) * 8;
    const bf16_t* arow[A_ITERS];
#pragma unroll
    for (int i = 0; i < A_ITERS; i++) {
        int m = m0 + tid / (BK / 8) + i * (THREADS / (BK / 8));
        arow[i] = m < m1 ? x + (long long)(xidx ? xidx[m] : m) * K + akc : nullptr;
    }
    const int bkc = (tid % B_CPR) * B_CHUNK;
    const unsigned char* brow[B_ITERS];
#pragma unroll
    for (int i = 0; i < B_ITERS; i++) {
        int r = tid / B_CPR + i * (THREADS / B_CPR);
        int p = r / PR, wr = n0 + r % PR;
        long long rowBytes = WK == MG_BF16 ? 2LL * K : WK == MG_FP8 ? (long long)K : K / 2;
        long long kb = WK == MG_BF16 ? 2LL * bkc : WK == MG_FP8 ? bkc : bkc / 2;
        brow[i] = wr < N ? (p ? wb1 : wb0) + wr * rowBytes + kb : nullptr;
    }

    auto load = [&](int s, int kt) {
        const int k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < A_ITERS; i++) {
            int r = tid / (BK / 8) + i * (THREADS / (BK / 8));
            bool ok = arow[i] && k0 + akc < K;
            mg_cp16(As + s * A_STAGE + (r * LDS + akc) * 2, ok ? (const void*)(arow[i] + k0) : (const void*)x, ok);
        }
#pragma unroll
        for (int i = 0; i < B_ITERS; i++) {
            int r = tid / B_CPR + i * (THREADS / B_CPR);
            bool ok = brow[i] && k0 + bkc < K;
            long long kb = WK == MG_BF16 ? 2LL * k0 : WK == MG_FP8 ? k0 : k0 / 2;
            int dst = WK == MG_BF16 ? (r * LDS + bkc) * 2 : WK == MG_FP8 ? r * BK + bkc : r * (BK / 2) + bkc / 2;
            mg_cp16(Bs + s * B_STAGE + dst, ok ? (const void*)(brow[i] + kb) : (const void*)x, ok);
        }
    };

    // The units this thread widens (mg_units): rows tid/(BK/8) +
    // i·THREADS/(BK/8) at k offset 8·(tid % (BK/8)) (THREADS is a multiple
    // of BK/8, and THREADS/(BK/8) divides PR). Their scales are loaded one
    // k tile ahead (widen uses them after the next tile's loads are
    // issued), so their latency hides behind the MMAs.
    constexpr int CV_ROWS = THREADS / (BK / 8);
    static_assert(PR % CV_ROWS == 0, "a unit's part must not depend on the thread");
    const mg_units<WK, CV_ITERS, PR> units(tid / (BK / 8), CV_ROWS, (tid % (BK / 8)) * 8, n0, N, qa, qc, wb0, wb1,
                                           scale_off);

    // widen turns raw stage s into Bc with the tile's scales sc (f32s: a
    // constant at each call); rows past N and columns past K become zeros.
    auto widen = [&](int s, const unsigned (&sc)[CV_ITERS], bool f32s) {
#pragma unroll
        for (int i = 0; i < CV_ITERS; i++)
            *(uint4*)(Bc + (units.row0 + i * CV_ROWS) * LDS + units.ck) = units.widen(Bs + s * B_STAGE, i, sc[i], f32s);
    };

    // The smem row of this warp's n8 tile j: with GLU the first NT/2 tiles
    // are gate rows and the last NT/2 the up rows of the same columns.
    auto brow_of = [&](int j) {
        if (GLU) return j < NT / 2 ? wn * (WN / 2) + j * 8 : PR + wn * (WN / 2) + (j - NT / 2) * 8;
        return wn * WN + j * 8;
    };

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0.f;

#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
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
        mg_wait<ST - 2>();
        __syncthreads();
        const int s = kt % ST;
        const bf16_t* Bt = (const bf16_t*)(Bs + s * B_STAGE);
        if (WK != MG_BF16) {
            if (f32s) {  // each branch compiles one scale form
                widen(s, sc, true);
                if (kt + 1 < KT) units.scales(kt + 1, K, qa, qb, sc, true);
            } else {
                widen(s, sc, false);
                if (kt + 1 < KT) units.scales(kt + 1, K, qa, qb, sc, false);
            }
            __syncthreads();
            Bt = Bc;
        }
        if (kt + ST - 1 < KT) load((kt + ST - 1) % ST, kt + ST - 1);
        mg_commit();
        const bf16_t* At = (const bf16_t*)(As + s * A_STAGE);
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            unsigned af[MT][4], bfr[NT][2];
#pragma unroll
            for (int i = 0; i < MT; i++)
                mg_ldm_x4(af[i], At + (wm * WM + i * 16 + (lane & 15)) * LDS + kk * 16 + (lane >> 4) * 8);
#pragma unroll
            for (int j = 0; j < NT; j += 2) {  // n8 tiles j and j+1 (never split between gate and up)
                unsigned r[4];
                mg_ldm_x4(r, Bt + (brow_of(j + (lane >> 4)) + (lane & 7)) * LDS + kk * 16 + ((lane >> 3) & 1) * 8);
                bfr[j][0] = r[0], bfr[j][1] = r[1], bfr[j + 1][0] = r[2], bfr[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int j = 0; j < NT; j++) mg_mma(acc[i][j], af[i], bfr[j]);
        }
    }
    mg_wait<0>();

    // Epilogue: c0, c1 at (lane/4, 2·(lane%4) + {0, 1}), c2, c3 eight rows below.
#pragma unroll
    for (int i = 0; i < MT; i++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int row = m0 + wm * WM + i * 16 + (lane >> 2) + h * 8;
            if (row >= m1) continue;
            bf16_t* o = out + (long long)row * N;
#pragma unroll
            for (int j = 0; j < NT / P; j++) {
                int col = n0 + (GLU ? wn * (WN / 2) : wn * WN) + j * 8 + (lane & 3) * 2;
                float v[2];
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    v[c] = acc[i][j][2 * h + c];
                    if (GLU) {
                        float g = v[c], u = acc[i][j + NT / 2][2 * h + c];
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
}

// Tile configurations (BM, BN, WM, WN, stages): s for a few rows per expert
// (decode, small batches: bound by reading the weights), m and l for
// prefill. The host picks one by the average rows per expert
// (engine/backend/cuda/rank_moe_tiles.go; rank_moe_grouped.go holds the
// shared memory each needs).
#define MG_CFG_s 16, 128, 16, 32, 4
#define MG_CFG_m 64, 128, 64, 32, 3
#define MG_CFG_l 128, 128, 64, 32, 3
#define MG_CFG_x 128, 256, 64, 64, 3

#define MG_INST(wn, WK, cfg, gn, GLU)                                                                  \
    extern "C" __global__ void moe_gemm_##wn##_##gn##_##cfg(                                                   \
        bf16_t* out, const bf16_t* x, const int* xidx, const unsigned long long* wptr, const int* offsets,     \
        const int* tiles, int nexp, int N, int K, long long scale_off, int qa, int qb, int qc) {               \
        moe_gemm<MG_CFG_##cfg, WK, GLU>(out, x, xidx, wptr, offsets, tiles, nexp, N, K, scale_off, qa, qb, qc); \
    }
#define MG_CFGS(wn, WK, gn, GLU) \
    MG_INST(wn, WK, s, gn, GLU) MG_INST(wn, WK, m, gn, GLU) MG_INST(wn, WK, l, gn, GLU) MG_INST(wn, WK, x, gn, GLU)
#define MG_KINDS(gn, GLU) MG_CFGS(bf16, MG_BF16, gn, GLU) MG_CFGS(fp8, MG_FP8, gn, GLU) MG_CFGS(int4, MG_INT4, gn, GLU)
MG_KINDS(glu, true)
MG_KINDS(down, false)
