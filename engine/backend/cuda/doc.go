//go:build cuda

// Package cuda is hsdb's CUDA backend, built only with the `cuda` build
// tag. It has two layers.
//
// The backend (rank.go, rank_*.go): Device implements backend.Device for
// one tensor-parallel rank and Comm implements backend.Comm, so the
// architectures run on a GPU unchanged. NewRanks places world ranks one per
// GPU with NCCL collectives, or all on GPU 0 as virtual ranks (--tp N on
// one GPU) with in-process collectives over a backend.Group; each rank
// keeps its own scopes and memory accounting. Activations are f32, bf16 or
// f16 (the model's dtype); every kernel and GEMM accumulates in f32. Op
// outputs live in scopes freed by PopScope; Upload and Zeros are
// persistent. Prefill attention in bf16/f16 with head dim 64 or 128 runs
// the fused tensor-core kernel of kernels/flash_attention.cu
// (FlashAttention-2; HSDB_CUDA_FLASH=0 turns it off); other prefills run
// as HF's eager attention (cuBLAS q·kᵀ, masked softmax in f32, cuBLAS ·v),
// which keeps f32 exactly comparable with the CPU backend; decode uses the
// tiled kernels. HSDB_CUDA_PROFILE=1 times every op with events
// (ProfileReport).
//
// The runtime layer beneath it, so that each op is a thin launch:
//
//   - GPU: one goroutine per GPU, locked to its OS thread, owns the
//     device's primary context and a stream, and runs submitted closures in
//     order (Do); no other goroutine touches the context. SharedGPU gives
//     every rank and engine of a process the same GPU value.
//   - Kernels from package kernels (embedded PTX), loaded lazily per module
//     and cached; typed launch wrappers (RMSNorm, AddRMSNorm, Embedding,
//     RoPE, KVCacheWrite, Attention, FlashAttention, AttnSoftmax, SiluMul,
//     Add, Scale, Cast, FP8Dequant, GatherRows, MoECombine, Copy2D,
//     Moments).
//   - A caching device memory pool (plain cuMemAlloc, never managed memory)
//     with per-class accounting and an *OOMError that says what holds the
//     memory; pinned host buffers and events for asynchronous readback.
//   - cuBLAS (MatMul, Linear) and NCCL (NCCLComm: AllReduceSum,
//     AllGather).
//
// The driver (libcuda.so.1), cuBLAS and NCCL are all opened with dlopen at
// run time through small C shims (shim_*.c) that declare the few types they
// use, so building needs no CUDA header or library, and a binary built with
// -tags cuda starts anywhere: without a driver or GPU, Open and DeviceCount
// return ErrNoDriver or ErrNoDevice. HSDB_CUBLAS and HSDB_NCCL name the
// libraries when they are off the loader path (scripts/cuda-libs.sh finds
// PyTorch's pip copies). (gorgonia.org/cu was not used: its package init
// calls os.Exit(1) when cuInit fails, which would kill hsdb on any machine
// without a usable GPU before main runs.)
//
// Router top-k (DeepSeek-V3 noaux_tc grouped selection) is not here: it
// runs on the host, because the expert GEMM sizes it decides must reach
// the host anyway, and [tokens, 256] logits are small.
//
// This package may import engine/tensor, engine/backend and kernels only
// (its tests also use engine/backend/cpu as the reference); it must not
// import repl, inspect, engine/model or the architectures.
package cuda
