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

// wg_mma_rs_n128: d[64 × 128] += A[64 × 16] · B for one warpgroup, A in
// registers a (the m64k16 bf16 fragment: thread t holds rows 16·(t/32) +
// (t%32)/4 and +8, columns 2·(t%4), +1 (a[0], a[1]) and +8, +9 (a[2],
// a[3])), B in shared memory (descriptor db): K-major, B[128 × 16]ᵀ (TB
// 0), or MN-major, [16 × 128] with the 128 contiguous (TB 1,
// imm-trans-b); f32 accumulators in the m64n128 fragment (thread t holds,
// for n8 block j, d[4j..4j+3] = rows 16·(t/32) + (t%32)/4 and +8, columns
// 8j + 2·(t%4) and +1).
template <int TB>
__device__ __forceinline__ void wg_mma_rs_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
        : WG_D32(0), WG_D32(32)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1), "n"(TB)
        : "memory");
}

// wg_mma_rs_n64: d[64 × 64] (+)= A[64 × 16] · B[64 × 16]ᵀ for one
// warpgroup, A in registers (as wg_mma_rs_n128), B K-major in shared
// memory (descriptor db); acc 0 overwrites d, otherwise adds to it.
__device__ __forceinline__ void wg_mma_rs_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long db, int acc) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
        : WG_D32(0)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc)
        : "memory");
}
