// Package kernels holds hsdb's CUDA kernels: the CUDA C sources
// (kernels/*.cu and the shared kernels/*.cuh), the PTX that
// scripts/build-kernels.sh generates from them for compute capability 9.0
// (kernels/ptx/*.ptx, committed), and the Go embedding of that PTX. A
// module marked "// build: sm_90a" (moe_wgmma.cu and moe_wgra.cu: Hopper's
// wgmma through inline assembly) gets PTX for .target sm_90a, which only a device of
// compute capability 9.0 loads; the host side uses it only there.
//
// Every kernel is a plain extern "C" function named op_dtype (rmsnorm_bf16,
// cast_f32_bf16, stats_final) that computes in f32 and rounds once on store,
// in the style of candle's CUDA kernels. The launch wrappers, which need a
// CUDA context, live in engine/backend/cuda under the `cuda` build tag; this
// package is pure Go, has no build tag and imports only the standard library,
// so the PTX and its staleness test are available on any machine.
//
// It must not import anything from hsdb, nor cgo.
package kernels
