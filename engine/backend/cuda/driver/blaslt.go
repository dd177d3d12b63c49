//go:build cuda

package driver

/*
#include <stdlib.h>
#include "shim_blas.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// The block-scaled fp8 GEMM of cuBLASLt (cuBLAS 12.9 and later, Hopper):
// both operands float8_e4m3fn, the weight scaled per 128×128 block and the
// activations per 1×128 group along k, f32 accumulation, bf16 output —
// the GEMM DeepSeek-V3's inference code, vLLM's W8A8 block-fp8 linear and
// HF's FineGrainedFP8 compute for an fp8 checkpoint.

// cublasLtMatmulMatrixScale_t values (cublasLt.h, CUDA 12.9 / 13).
const (
	ltScaleVec128   = 4 // CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
	ltScaleBlk128   = 5 // CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
	fp8BlockGEMMTag = "cublasLtMatmul fp8 block-scaled"
)

// FP8BlockWorkspace is the most workspace, in bytes, FP8BlockLinear lets
// cuBLASLt's heuristic choose an algorithm for (32 MiB): the memory plan
// counts it (engine/plan.W8A8Workspace, checked equal by a test).
const FP8BlockWorkspace = 32 << 20

// ErrNoBlockFP8 is returned by FP8BlockLinear when the opened cuBLAS has
// no cuBLASLt block-scaled fp8 GEMM (cuBLAS before 12.9, or a GPU other
// than Hopper: the heuristic finds no algorithm).
var ErrNoBlockFP8 = errors.New("cuBLASLt has no block-scaled fp8 GEMM here (needs cuBLAS 12.9 or later on a compute capability 9.0 GPU)")

// ltState is a device's cuBLASLt handle and the algorithms chosen per
// GEMM shape (device thread only).
type ltState struct {
	h     C.cublasLtHandle_t
	err   error
	algos map[[3]int]*ltAlgo
}

// ltMaxAlgos bounds the algorithms a device remembers (a few hundred
// bytes each): past it the cache starts over.
const ltMaxAlgos = 4096

type ltAlgo struct {
	algo C.cublasLtMatmulAlgo_t
	need int64 // workspace bytes
}

// lt returns the device's cuBLASLt state, creating it on first use.
func (d *GPU) lt() (*ltState, error) {
	b, err := d.cublas()
	if err != nil {
		return nil, err
	}
	if b.lt == nil {
		b.lt = &ltState{algos: map[[3]int]*ltAlgo{}}
		if msg := C.hsdb_blaslt_open(); msg != nil {
			b.lt.err = fmt.Errorf("%w: %s", ErrNoBlockFP8, C.GoString(msg))
		} else if err := blasCheck("cublasLtCreate", C.hsdb_cublasLtCreate(&b.lt.h)); err != nil {
			b.lt.err = err
		}
	}
	return b.lt, b.lt.err
}

// FP8BlockLinear computes y [tokens, out] bf16 = x · Wᵀ with cuBLASLt's
// block-scaled fp8 GEMM: xq [tokens, in] float8_e4m3fn with xs
// [ceil(in/128), tokens] f32 (group g of token t at xs[g·tokens + t], as
// FP8ActQuant writes them), w [out, in] float8_e4m3fn with ws
// [ceil(out/128), wld] f32 (a checkpoint's weight_scale_inv, rows padded
// to wld = ceil(in/128) rounded up to 4 entries). workspace allocates
// the bytes the chosen algorithm needs (at most 32 MiB; called on the
// device thread) and returns it with its release. Errors: ErrBadArgument
// for sizes, ErrNoBlockFP8, a *BLASError.
func (d *GPU) FP8BlockLinear(y, xq, xs, w, ws Ptr, tokens, in, out int, workspace func(n int64) (Ptr, func(), error)) error {
	if tokens <= 0 || in <= 0 || out <= 0 || in%16 != 0 || out%16 != 0 || tokens > 1<<31-1 || in > 1<<31-1 || out > 1<<31-1 {
		return fmt.Errorf("%w: fp8 block linear [%d, %d] x [%d, %d]ᵀ (sizes positive, in and out multiples of 16)", ErrBadArgument, tokens, in, out, in)
	}
	return d.Do(func() error {
		lt, err := d.lt()
		if err != nil {
			return fmt.Errorf("cuda:%d: %w", d.ordinal, err)
		}
		key := [3]int{tokens, in, out}
		st := C.cudaStream_t(unsafe.Pointer(d.stream))
		a := lt.algos[key]
		if a == nil { // the heuristic needs the real operands: it checks the scale pointers
			a = &ltAlgo{}
			var have C.int
			var need C.ulonglong
			s := C.hsdb_lt_fp8_block_gemm(lt.h, C.int(out), C.int(tokens), C.int(in), C.ulonglong(w), C.ulonglong(ws), C.ulonglong(xq), C.ulonglong(xs),
				C.ulonglong(y), ltScaleBlk128, ltScaleVec128, &a.algo, &have, &need, 0, FP8BlockWorkspace, st)
			if s == 15 { // CUBLAS_STATUS_NOT_SUPPORTED: no algorithm
				return fmt.Errorf("cuda:%d: fp8 block linear [%d, %d] x [%d, %d]ᵀ: %w", d.ordinal, tokens, in, out, in, ErrNoBlockFP8)
			}
			if err := blasCheck(fp8BlockGEMMTag+" heuristic", s); err != nil {
				return fmt.Errorf("cuda:%d: fp8 block linear [%d, %d] x [%d, %d]ᵀ: %w", d.ordinal, tokens, in, out, in, err)
			}
			a.need = int64(need)
			if len(lt.algos) >= ltMaxAlgos { // one per token count seen: bounded over a long session
				clear(lt.algos)
			}
			lt.algos[key] = a
		}
		var wp Ptr
		if a.need > 0 {
			p, release, err := workspace(a.need)
			if err != nil {
				return err
			}
			defer release()
			wp = p
		}
		have := C.int(1)
		var need C.ulonglong
		s := C.hsdb_lt_fp8_block_gemm(lt.h, C.int(out), C.int(tokens), C.int(in), C.ulonglong(w), C.ulonglong(ws), C.ulonglong(xq), C.ulonglong(xs),
			C.ulonglong(y), ltScaleBlk128, ltScaleVec128, &a.algo, &have, &need, C.ulonglong(wp), C.ulonglong(a.need), st)
		if err := blasCheck(fp8BlockGEMMTag, s); err != nil {
			return fmt.Errorf("cuda:%d: fp8 block linear [%d, %d] x [%d, %d]ᵀ: %w", d.ordinal, tokens, in, out, in, err)
		}
		return nil
	})
}
