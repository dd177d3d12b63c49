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
// Every driver call goes through one seam, cuAPI (cuapi.go), with two
// implementations chosen by build tag. With -tags cuda the driver
// (libcuda.so.1) is opened with dlopen through a small C shim
// (shim_driver.c) that declares the few types it uses, so building needs
// no CUDA header or library, and a binary built so starts anywhere:
// without a driver or GPU, Open and DeviceCount return ErrNoDriver or
// ErrNoDevice (the in-process `--device cuda` of hsdb). With -tags cuda,cu
// the calls go through gorgonia.org/cu, the binding the user chose; cu
// links -lcuda and its package init calls cuInit and exits the process
// when there is no GPU (gorgonia/cu#45), so that build is confined to the
// CUDA worker (cmd/hsdb-cuda-worker), a process that exists only where a
// GPU is wanted. cuBLAS and NCCL are opened with dlopen in both builds
// (their sonames differ by CUDA version). HSDB_CUBLAS and HSDB_NCCL name
// them when they are off the loader path (scripts/cuda-libs.sh finds
// PyTorch's pip copies); scripts/ci-cuda-vet.sh checks the shims'
// declarations against NVIDIA's headers and compiles both builds.
//
// This package may import engine/tensor, kernels and (cu tag only)
// gorgonia.org/cu; it must not
// import engine/backend or anything above it (repl, inspect, engine,
// engine/model, the architectures).
package driver
