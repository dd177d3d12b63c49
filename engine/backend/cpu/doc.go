// Package cpu is hsdb's CPU backend: every op of backend.Device in float32
// on the host, and an in-memory implementation of backend.Comm that lets N
// goroutines act as N tensor-parallel ranks ("virtual ranks").
//
// Weights may stay in their stored dtype (f32, bf16, f16); they are widened
// to float32 block by block inside Linear and Embedding. Upload aliases the
// host tensor it is given (it is no backend.UploadCopier), so the weight
// loader gives it copies, never views of a memory-mapped checkpoint.
// Activations are always float32.
//
// The heavy ops are built from a few inner loops (kernels.go: rows of a
// matrix times a vector, a weighted sum of rows, softmax, SiLU-and-multiply)
// that run as AVX2+FMA assembly on amd64 CPUs that have it
// (kernels_amd64.s, chosen at start-up) and as portable Go elsewhere (or
// with the purego build tag). Ops of at least parallelMin multiply-adds are
// split over a pool of GOMAXPROCS workers; smaller ones, such as a decode
// step of a small model, run on the calling goroutine. Small op outputs are
// reused once their scope closes (arena.go); HSDB_CPU_POISON=1 in the
// environment turns that into NaN-filling, to catch a tensor used after its
// scope.
//
// It imports engine/tensor, engine/backend and golang.org/x/sys/cpu only.
package cpu
