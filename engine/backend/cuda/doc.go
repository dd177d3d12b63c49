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
// attention in bf16/f16 with head dim 64 or 128, or DeepSeek's MLA (q·k
// over 192, v 128), runs the fused tensor-core kernel of
// kernels/flash_attention.cu (FlashAttention-2; HSDB_CUDA_FLASH=0 turns it
// off; MLA at DeepSeek-V3's shapes, 4 × 1024 tokens: 1.8 ms for two layers
// against 5.3 ms on the GEMM path); other prefills run as HF's eager attention (cuBLAS q·kᵀ,
// masked softmax in f32, cuBLAS ·v), which keeps f32 exactly comparable
// with the CPU backend; decode uses the tiled kernels. HSDB_CUDA_PROFILE=1
// times every op with events (driver.ProfileReport).
//
// GPU wraps the CUDA runtime of package driver (engine/backend/cuda/driver:
// the device thread, memory pool, module loading, cuBLAS, NCCL) with typed
// launch wrappers of the kernels of package kernels (embedded PTX), so
// that each op is a thin launch: RMSNorm, AddRMSNorm, Embedding, RoPE,
// KVCacheWrite, Attention, FlashAttention, AttnSoftmax, SiluMul, Add,
// Scale, Cast, FP8Dequant, FP8DequantBatch, GatherRows, MoECombine,
// MoERoute, MoEAlign, Copy2D, Moments.
//
// The MoE (backend.MoE, rank_moe.go) runs on the device: routing
// (kernels/moe_route.cu, the ids of engine/backend/moeref exactly), the
// permutation of the slots by expert, the gather, SiLU·mul and the
// weighted combine are kernels; the experts' GEMMs are one cuBLAS GEMM per
// expert and projection (gate and up stacked as vLLM's w13), issued from
// one cgo call after one copy of the per-expert row counts to the host.
// Of the grouped GEMMs measured (driver.ExpertGEMMs: per-expert GEMMs on
// side streams, the same on one stream, cublasGemmGroupedBatchedEx), side
// streams are the fastest at DeepSeek-V3's shapes and the default; a
// grouped GEMM kernel reading the expert offsets on the device (vLLM's
// fused_moe) would remove the count copy and is not written yet.
//
// fp8 block-scaled weights (tensor.QuantFP8Block) stay fp8 on the device
// with their f32 scales (rank_fp8.go) and are widened into a scratch of
// the activation dtype right before each GEMM (per Linear, per chunk of
// routed experts): memory at the stored size, time above bf16's (the
// widening writes and reads back a bf16 copy; see rank_fp8.go).
//
// This package may import engine/tensor, engine/backend, kernels and
// engine/backend/cuda/driver only (its tests also use engine/backend/cpu
// as the reference); it has no cgo of its own, and must not import repl,
// inspect, engine/model or the architectures.
package cuda
