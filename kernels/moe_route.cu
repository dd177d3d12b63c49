// moe_route.cu: DeepSeek MoE routing and the permutation of tokens by expert
// on the device, so that a MoE layer needs no host round trip for its
// routing (vLLM's grouped_topk + moe_align_block_size, fused_moe.py; the
// selection rule is HF transformers 5.x DeepseekV3TopkRouter /
// DeepseekV3MoE.route_tokens_to_experts with DeepSeek's own -inf group
// mask, exactly as engine/backend/moeref.Router computes it on the host).
#include "common.cuh"

#define RT_NEG_INF __int_as_float(0xff800000)
#define RT_NAN __int_as_float(0x7fc00000)

// rt_better reports whether value x at index i sorts before value y at
// index j in moeref's order: descending, NaN last, ties (NaN with NaN too)
// by lower index first (Go's sort.SliceStable with "x > y").
__device__ __forceinline__ bool rt_better(float x, int i, float y, int j) {
    bool xn = x != x, yn = y != y;
    if (xn || yn) return (xn && yn) ? i < j : yn;
    if (x != y) return x > y;
    return i < j;
}

// rt_argbest reduces (v, i) over the block by rt_better and returns the
// winner to every thread. blockDim.x is a multiple of 32; sv/si hold 32.
__device__ __forceinline__ void rt_argbest(float& v, int& i, float* sv, int* si) {
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (rt_better(ov, oi, v, i)) v = ov, i = oi;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) sv[warp] = v, si[warp] = i;
    __syncthreads();
    v = lane < nw ? sv[lane] : RT_NAN;
    i = lane < nw ? si[lane] : 0x7fffffff;
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (rt_better(ov, oi, v, i)) v = ov, i = oi;
    }
}

// Go's max(a, b) for float32: NaN if either is NaN.
__device__ __forceinline__ float rt_max(float a, float b) {
    if (a != a || b != b) return RT_NAN;
    return a > b ? a : b;
}

// moe_route: one block per token t of logits [tokens, E] f32 (the gate's
// float32 logits). Writes ids [tokens, k] int32 (best first) and weights
// [tokens, k] f32:
//   score  = sigmoid(logit) (sigmoid != 0) or softmax over the row, f32
//            (sigmoid and exp evaluated in f64 and rounded, as the host
//            reference's correctly rounded float32);
//   choice = score + bias[e] (bias [E] f32 or null: selection only);
//   with groups > 1 and topk_group < groups: group g (experts
//   g*E/groups ..) scores the sum of its two best choices when bias is
//   set (noaux_tc) else its best; the topk_group best groups are kept
//   and every other expert's choice is -inf;
//   the k best choices (rt_better order) are the ids; their weights are
//   their scores, divided by (their f32 sum + 1e-20) when norm != 0, then
//   multiplied by scale.
// blockDim.x: a multiple of 32, at most 1024. Dynamic shared memory:
// (3E + 2*groups) * 4 bytes.
extern "C" __global__ void moe_route(const float* logits, int* ids, float* weights, const float* bias, int E, int k,
                                     int groups, int topk_group, int sigmoid, int norm, float scale) {
    extern __shared__ float rt_smem[];
    float* score = rt_smem;
    float* choice = score + E;
    int* taken = (int*)(choice + E);
    float* gscore = (float*)(taken + E);
    int* keep = (int*)(gscore + groups);
    __shared__ float sv[32];
    __shared__ int si[32];
    __shared__ double sd[32];
    const long long t = blockIdx.x;
    const float* row = logits + t * E;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;

    if (sigmoid) {
        for (int e = tid; e < E; e += blockDim.x) score[e] = (float)(1.0 / (1.0 + exp(-(double)row[e])));
    } else {
        float mx = RT_NEG_INF;
        for (int e = tid; e < E; e += blockDim.x) mx = rt_max(mx, row[e]);
        for (int o = 16; o > 0; o >>= 1) mx = rt_max(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        if (lane == 0) sv[warp] = mx;
        __syncthreads();
        mx = RT_NEG_INF;
        for (int w = 0; w < nw; w++) mx = rt_max(mx, sv[w]);
        double s = 0;
        for (int e = tid; e < E; e += blockDim.x) {
            float x = (float)exp((double)(row[e] - mx));
            score[e] = x;
            s += (double)x;
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) sd[warp] = s;
        __syncthreads();
        s = 0;
        for (int w = 0; w < nw; w++) s += sd[w];
        float fs = (float)s;
        for (int e = tid; e < E; e += blockDim.x) score[e] = score[e] / fs;
    }
    __syncthreads();
    for (int e = tid; e < E; e += blockDim.x) {
        choice[e] = bias ? score[e] + bias[e] : score[e];
        taken[e] = 0;
    }
    __syncthreads();

    if (groups > 1 && topk_group < groups) {
        const int per = E / groups;
        for (int g = tid; g < groups; g += blockDim.x) {
            const float* c = choice + g * per;
            float v;
            if (bias) {
                if (per == 1) {
                    v = c[0];
                } else {
                    float a = RT_NEG_INF, b = RT_NEG_INF;
                    for (int j = 0; j < per; j++) {
                        float x = c[j];
                        if (x > a) b = a, a = x;
                        else if (x > b) b = x;
                    }
                    v = a + b;
                }
            } else {
                v = RT_NEG_INF;
                for (int j = 0; j < per; j++) v = rt_max(v, c[j]);
            }
            gscore[g] = v;
            keep[g] = 0;
        }
        __syncthreads();
        if (tid == 0) {
            for (int r = 0; r < topk_group; r++) {
                int best = -1;
                for (int g = 0; g < groups; g++)
                    if (!keep[g] && (best < 0 || rt_better(gscore[g], g, gscore[best], best))) best = g;
                keep[best] = 1;
            }
        }
        __syncthreads();
        for (int e = tid; e < E; e += blockDim.x)
            if (!keep[e / per]) choice[e] = RT_NEG_INF;
        __syncthreads();
    }

    // k rounds of a block-wide arg-best over the experts not yet taken.
    int* out_ids = ids + t * k;
    float* out_w = weights + t * k;
    for (int j = 0; j < k; j++) {
        float v = RT_NAN;
        int i = 0x7fffffff;
        for (int e = tid; e < E; e += blockDim.x)
            if (!taken[e] && rt_better(choice[e], e, v, i)) v = choice[e], i = e;
        rt_argbest(v, i, sv, si);
        if (tid == 0) {
            taken[i] = 1;
            out_ids[j] = i;
        }
        __syncthreads();
    }
    if (tid == 0) {
        float sum = 0.f;
        for (int j = 0; j < k; j++) {
            out_w[j] = score[out_ids[j]];
            sum += out_w[j];
        }
        if (norm) {
            float den = sum + 1e-20f;
            for (int j = 0; j < k; j++) out_w[j] /= den;
        }
        for (int j = 0; j < k; j++) out_w[j] *= scale;
    }
}

// moe_count: grid nlocal+1 blocks over ids [n] int32 (the routed slots
// t*k+j). Block e < nlocal writes counts[e], the number of slots routed to
// expert first+e. Block nlocal writes slot_row[i] = -1 for every slot
// whose expert is not local (another rank's under expert parallelism);
// moe_place fills the others. blockDim.x: a multiple of 32.
extern "C" __global__ void moe_count(const int* ids, int n, int first, int nlocal, int* counts, int* slot_row) {
    const int e = blockIdx.x;
    if (e == nlocal) {
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            int id = ids[i];
            if (id < first || id >= first + nlocal) slot_row[i] = -1;
        }
        return;
    }
    int c = 0;
    for (int i0 = 0; i0 < n; i0 += blockDim.x) {
        int i = i0 + threadIdx.x;
        c += __syncthreads_count(i < n && ids[i] == first + e);
    }
    if (threadIdx.x == 0) counts[e] = c;
}

// moe_place: grid nlocal blocks, after moe_count. Expert first+e's slots
// take the permuted rows off(e) .. off(e)+counts[e]-1, off(e) = the sum of
// counts[0..e), in slot order (so tokens keep their order within an
// expert, and the result does not depend on scheduling): for the r-th such
// slot i, src_token[off(e)+r] = i / k (the token it reads) and slot_row[i]
// = off(e)+r (where moe_combine finds its output). blockDim.x: a multiple
// of 32, at most 1024.
extern "C" __global__ void moe_place(const int* ids, int n, int k, int first, const int* counts, int* src_token,
                                     int* slot_row) {
    const int e = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    __shared__ int off;
    __shared__ int wsum[32];
    if (tid == 0) {
        int o = 0;
        for (int j = 0; j < e; j++) o += counts[j];
        off = o;
    }
    __syncthreads();
    int base = off;
    for (int i0 = 0; i0 < n; i0 += blockDim.x) {
        int i = i0 + tid;
        bool p = i < n && ids[i] == first + e;
        unsigned b = __ballot_sync(0xffffffffu, p);
        if (lane == 0) wsum[warp] = __popc(b);
        __syncthreads();
        int before = 0, total = 0;
        for (int w = 0; w < nw; w++) {
            int s = wsum[w];
            if (w < warp) before += s;
            total += s;
        }
        if (p) {
            int pos = base + before + __popc(b & ((1u << lane) - 1u));
            src_token[pos] = i / k;
            slot_row[i] = pos;
        }
        base += total;
        __syncthreads();
    }
}
