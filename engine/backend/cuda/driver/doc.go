//go:build cuda

// Package driver is the CUDA runtime beneath hsdb's CUDA backend
// (engine/backend/cuda), built only with the `cuda` build tag; it knows
// nothing of ranks, tensors' shapes or the forward pass:
//
//   - GPU: one goroutine per GPU, locked to its OS thread, owns the
//     device's primary context and a stream, and runs submitted closures in
//     order (Do); no other goroutine touches the context. SharedGPU gives
//     every rank and engine of a process the same GPU value.
//   - Kernels of package kernels (embedded PTX), loaded lazily per module
//     and cached, and launched by name (Launch).
//   - A caching device memory pool (plain cuMemAlloc, never managed memory)
//     with per-class accounting and an *OOMError that says what holds the
//     memory; pinned host buffers and events for asynchronous readback.
//   - cuBLAS (MatMul, Linear) and NCCL (NCCLComm: AllReduceSum,
//     AllGather); profiling of ops with events (Profiled, ProfileReport).
//
// The driver (libcuda.so.1), cuBLAS and NCCL are all opened with dlopen at
// run time through small C shims (shim_*.c) that declare the few types they
// use, so building needs no CUDA header or library, and a binary built with
// -tags cuda starts anywhere: without a driver or GPU, Open and DeviceCount
// return ErrNoDriver or ErrNoDevice. HSDB_CUBLAS and HSDB_NCCL name the
// libraries when they are off the loader path (scripts/cuda-libs.sh finds
// PyTorch's pip copies); scripts/ci-cuda-vet.sh checks the shims'
// declarations against NVIDIA's headers. (gorgonia.org/cu was not used: its
// package init calls os.Exit(1) when cuInit fails, which would kill hsdb on
// any machine without a usable GPU before main runs.)
//
// This package may import engine/tensor and kernels only; it must not
// import engine/backend or anything above it (repl, inspect, engine,
// engine/model, the architectures).
package driver
