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
// against 5.3 ms on the GEMM path), bf16 MLA on compute capability 9.0
// kernels/flash_wgmma.cu's (wgmma, its two warpgroups in ping-pong, 0.60
// ms a layer against 0.90; HSDB_CUDA_FLASH_WGMMA=0 keeps
// flash_attention.cu's, HSDB_CUDA_FLASH_PINGPONG=0 the warpgroups in
// lockstep), which MLA's
// MLAAttention also runs for decode straight on kv_b_proj's output and
// k_pe (no per-head keys or values written); other prefills run as HF's
// eager attention (cuBLAS q·kᵀ, masked softmax in f32, cuBLAS ·v), which
// keeps f32 exactly comparable with the CPU backend; decode uses the
// tiled kernels. HSDB_CUDA_PROFILE=1
// times every op with events (driver.ProfileReport).
//
// GPU wraps the CUDA runtime of package driver (engine/backend/cuda/driver:
// the device thread, memory pool, module loading, cuBLAS, NCCL) with typed
// launch wrappers of the kernels of package kernels (embedded PTX), so
// that each op is a thin launch: RMSNorm, AddRMSNorm, Embedding, RoPE,
// KVCacheWrite, Attention, FlashAttention, AttnSoftmax, SiluMul, Add,
// Scale, Cast, FP8Dequant, FP8DequantBatch, FP8ActQuant, FP8ActFakeQuant,
// GatherRows, MoECombine, MoERoute, MoEAlign, Copy2D, Moments. The
// block-scaled fp8 GEMM of --w8a8 is cuBLASLt's (driver.FP8BlockLinear,
// rank_w8a8.go).
//
// The MoE (backend.MoE, rank_moe.go) runs on the device: routing
// (kernels/moe_route.cu, the ids of engine/backend/moeref exactly), the
// permutation of the slots by expert, the gather, SiLU·mul and the
// weighted combine are kernels. The experts' GEMMs run on hsdb's grouped
// kernels (rank_moe_grouped.go), which read the per-expert row offsets on
// the device, fuse the gather and SiLU·mul, and read the weights as stored
// (bf16, fp8, packed int4, widened to bf16 on the fly): kernels/moe_gemm.cu
// on mma.sync for a few rows per expert, kernels/moe_wgmma.cu on Hopper's
// wgmma (sm_90a) for prefill batches (tiles of 128 or 192 rows), and for
// fp8 and int4 weights kernels/moe_wgra.cu, which makes the weights the
// wgmma A operand so that each warpgroup widens only its own rows; where
// cuBLAS measured faster (bf16 above 200 rows per expert, and without
// wgmma above 48), one cuBLAS GEMM per expert and projection (driver.ExpertGEMMs, on side streams by
// default) after one copy of the counts to the host. moeKernelDefault and
// pickTile hold the choice and the measurements behind it.
//
// fp8 block-scaled weights (tensor.QuantFP8Block) stay fp8 on the device
// with their f32 scales (rank_fp8.go): memory at the stored size. Dense
// Linears widen them into a scratch of the activation dtype right before
// the GEMM; the routed experts widen tile by tile inside the grouped
// kernels (see rank_fp8.go for the times).
//
// This package may import engine/tensor, engine/backend, kernels and
// engine/backend/cuda/driver only (its tests also use engine/backend/cpu
// as the reference); it has no cgo of its own, and must not import repl,
// inspect, engine/model or the architectures.
package cuda
