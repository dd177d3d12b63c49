//go:build cuda

// Package cuda is hsdb's CUDA runtime layer, built only with the `cuda`
// build tag: everything the CUDA backend's ops need beneath them, so each op
// is a thin launch.
//
//   - Device: one goroutine per GPU, locked to its OS thread, owns the
//     device's primary context and a stream, and runs submitted closures in
//     order (Do); no other goroutine touches the context.
//   - Kernels from package kernels (embedded PTX), loaded lazily per module
//     and cached; typed launch wrappers (RMSNorm, AddRMSNorm, Embedding,
//     RoPE, KVCacheWrite, Attention, SiluMul, Add, Scale, Cast, FP8Dequant,
//     GatherRows, MoECombine, Moments).
//   - A caching device memory pool (plain cuMemAlloc, never managed memory)
//     with per-class accounting and an *OOMError that says what holds the
//     memory; pinned host buffers and events for asynchronous readback.
//   - cuBLAS (MatMul, Linear) and NCCL (Comm: AllReduceSum, AllGather).
//
// The driver (libcuda.so.1), cuBLAS and NCCL are all opened with dlopen at
// run time through small C shims (shim_*.c) that declare the few types they
// use, so building needs no CUDA header or library, and a binary built with
// -tags cuda starts anywhere: without a driver or GPU, Open and DeviceCount
// return ErrNoDriver or ErrNoDevice. (gorgonia.org/cu was not used: its
// package init calls os.Exit(1) when cuInit fails, which would kill hsdb on
// any machine without a usable GPU before main runs.)
//
// Router top-k (DeepSeek-V3 noaux_tc grouped selection) is not here: it
// runs on the host, because the expert GEMM sizes it decides must reach
// the host anyway, and [tokens, 256] logits are small.
//
// This package may import engine/tensor and kernels only; it must not
// import repl, inspect, or the architectures.
package cuda
