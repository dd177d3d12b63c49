//go:build cuda

// Package cuda is hsdb's CUDA backend, built only with the `cuda` build
// tag: Device implements backend.Device for one tensor-parallel rank and
// Comm implements backend.Comm (rank.go, rank_*.go), so the architectures
// run on a GPU unchanged. NewRanks places world ranks one per GPU with
// NCCL collectives, or all on GPU 0 as virtual ranks (--tp N on one GPU)
// with in-process collectives over a backend.Group; each rank keeps its own
// scopes and memory accounting. Activations are f32, bf16 or f16 (the
// model's dtype); every kernel and GEMM accumulates in f32. Op outputs live
// in scopes freed by PopScope; Upload and Zeros are persistent. Prefill
// attention in bf16/f16 with head dim 64 or 128 runs the fused tensor-core
// kernel of kernels/flash_attention.cu (FlashAttention-2; HSDB_CUDA_FLASH=0
// turns it off); other prefills run as HF's eager attention (cuBLAS q·kᵀ,
// masked softmax in f32, cuBLAS ·v), which keeps f32 exactly comparable
// with the CPU backend; decode uses the tiled kernels. HSDB_CUDA_PROFILE=1
// times every op with events (driver.ProfileReport).
//
// GPU wraps the CUDA runtime of package driver (engine/backend/cuda/driver:
// the device thread, memory pool, module loading, cuBLAS, NCCL) with typed
// launch wrappers of the kernels of package kernels (embedded PTX), so
// that each op is a thin launch: RMSNorm, AddRMSNorm, Embedding, RoPE,
// KVCacheWrite, Attention, FlashAttention, AttnSoftmax, SiluMul, Add,
// Scale, Cast, FP8Dequant, GatherRows, MoECombine, Copy2D, Moments.
//
// Router top-k (DeepSeek-V3 noaux_tc grouped selection) is not here: it
// runs on the host, because the expert GEMM sizes it decides must reach
// the host anyway, and [tokens, 256] logits are small.
//
// This package may import engine/tensor, engine/backend, kernels and
// engine/backend/cuda/driver only (its tests also use engine/backend/cpu
// as the reference); it has no cgo of its own, and must not import repl,
// inspect, engine/model or the architectures.
package cuda
