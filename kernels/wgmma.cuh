// wgmma.cuh: what the kernels on Hopper's warpgroup MMAs (wgmma.mma_async,
// sm_90a) share: the shared-memory descriptor of a K-major bf16 tile in
// the 128-byte swizzle, the fences, commits and waits of the asynchronous
// MMAs, and the compiler barrier around their accumulators. Included by
// moe_wgmma.cu (both operands in shared memory) and moe_wgra.cu (the
// weights widened into registers).
#pragma once

// wg_desc is the wgmma shared-memory descriptor of a K-major bf16 tile
// with 128-byte rows in the 128-byte swizzle at shared address addr
// (1024-byte aligned): start address >> 4 in bits 0-13, leading byte
// offset 16 (unused by this layout) in bits 16-29, stride byte offset
// 1024 (eight rows) in bits 32-45, swizzle mode 1 (128B) in bits 62-63.
__device__ __forceinline__ unsigned long long wg_desc(unsigned addr) {
    return (unsigned long long)((addr & 0x3ffffu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// wg_proxy_fence makes this thread's shared-memory writes (cp.async,
// st.shared) visible to the async proxy that wgmma reads through.
__device__ __forceinline__ void wg_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// wg_hold keeps the compiler from moving accesses of the accumulators
// across the asynchronous MMAs (they are written behind its back).
template <int R>
__device__ __forceinline__ void wg_hold(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i])::"memory");
}
// wg_hold_r is wg_hold for register operands (A fragments) that an
// asynchronous MMA reads until its wait.
template <int R>
__device__ __forceinline__ void wg_hold_r(unsigned (&a)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+r"(a[i])::"memory");
}

// WG_D8 and WG_D32 list the accumulators d[i..i+7] and d[i..i+31] as
// read-write operands of an inline wgmma (the m64nN fragment's N/2 f32).
#define WG_D8(i) \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_D32(i) WG_D8(i), WG_D8(i + 8), WG_D8(i + 16), WG_D8(i + 24)
