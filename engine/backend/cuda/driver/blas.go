//go:build cuda

package driver

/*
#include <stdlib.h>
#include "shim_blas.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"hsdb/engine/tensor"
)

var (
	blasOnce sync.Once
	blasErr  error
	blasLib  string
)

// blasCandidates lists (library, cuBLASLt to preload or "") in search
// order: HSDB_CUBLAS alone when set, else libcublas.so.13, .12, .11 by
// soname on the loader path and then in /usr/local/cuda/lib64.
func blasCandidates() [][2]string {
	if s := os.Getenv("HSDB_CUBLAS"); s != "" {
		lt := ""
		if dir, base := filepath.Split(s); dir != "" && strings.HasPrefix(base, "libcublas.so") {
			cand := filepath.Join(dir, strings.Replace(base, "libcublas", "libcublasLt", 1))
			if _, err := os.Stat(cand); err == nil {
				lt = cand
			}
		}
		return [][2]string{{s, lt}}
	}
	var out [][2]string
	for _, v := range []string{"13", "12", "11"} {
		out = append(out, [2]string{"libcublas.so." + v, ""})
		dir := "/usr/local/cuda/lib64"
		out = append(out, [2]string{filepath.Join(dir, "libcublas.so."+v), filepath.Join(dir, "libcublasLt.so."+v)})
	}
	return out
}

// loadBLAS opens cuBLAS once per process; it returns an error wrapping
// ErrNoCUBLAS listing every candidate tried and why it failed.
func loadBLAS() error {
	blasOnce.Do(func() {
		var tried []string
		for _, c := range blasCandidates() {
			if strings.HasPrefix(c[0], "/") {
				if _, err := os.Stat(c[0]); err != nil {
					tried = append(tried, c[0]+": not found")
					continue
				}
			}
			lib := C.CString(c[0])
			var lt *C.char
			if c[1] != "" {
				lt = C.CString(c[1])
			}
			msg := C.hsdb_blas_open(lib, lt)
			C.free(unsafe.Pointer(lib))
			if lt != nil {
				C.free(unsafe.Pointer(lt))
			}
			if msg == nil {
				blasLib = c[0]
				return
			}
			tried = append(tried, c[0]+": "+C.GoString(msg))
		}
		blasErr = fmt.Errorf("%w (set HSDB_CUBLAS to its path): %s", ErrNoCUBLAS, strings.Join(tried, "; "))
	})
	return blasErr
}

// BLASLibrary returns the cuBLAS library that was opened ("" before the
// first GEMM or when none could be).
func BLASLibrary() string { return blasLib }

// blasHandle is a device's cuBLAS handle, bound to its stream.
type blasHandle struct {
	h       C.cublasHandle_t
	version int
	lt      *ltState // cuBLASLt, opened by the first block-scaled fp8 GEMM
}

func (b *blasHandle) destroy() {
	if b.lt != nil && b.lt.err == nil {
		C.hsdb_cublasLtDestroy(b.lt.h)
	}
	C.hsdb_cublasDestroy(b.h)
}

// BLASError is a failed cuBLAS call: Op and the cublasStatus_t.
type BLASError struct {
	Op     string
	Status int
	Msg    string
}

// Error formats "OP: cuBLAS status N: TEXT".
func (e *BLASError) Error() string {
	return fmt.Sprintf("%s: cuBLAS status %d: %s", e.Op, e.Status, e.Msg)
}

func blasCheck(op string, s C.cublasStatus_t) error {
	if s == 0 {
		return nil
	}
	return &BLASError{Op: op, Status: int(s), Msg: C.GoString(C.hsdb_blas_status_string(s))}
}

// cublas returns the device's handle, creating it on first use (device
// thread only).
func (d *GPU) cublas() (*blasHandle, error) {
	if d.blas != nil {
		return d.blas, nil
	}
	if err := loadBLAS(); err != nil {
		return nil, err
	}
	b := &blasHandle{}
	if err := blasCheck("cublasCreate", C.hsdb_cublasCreate(&b.h)); err != nil {
		return nil, fmt.Errorf("cuda:%d: %w", d.ordinal, err)
	}
	if err := blasCheck("cublasSetStream", C.hsdb_cublasSetStream(b.h, C.cudaStream_t(unsafe.Pointer(d.stream)))); err != nil {
		C.hsdb_cublasDestroy(b.h)
		return nil, fmt.Errorf("cuda:%d: %w", d.ordinal, err)
	}
	var v C.int
	if blasCheck("cublasGetVersion", C.hsdb_cublasGetVersion(b.h, &v)) == nil {
		b.version = int(v)
	}
	d.blas = b
	return b, nil
}

// BLASVersion returns the version of the device's cuBLAS (major*10000 +
// minor*100 + patch, as cublasGetVersion), creating the handle if needed.
func (d *GPU) BLASVersion() (int, error) {
	var v int
	err := d.Do(func() error {
		b, err := d.cublas()
		if err == nil {
			v = b.version
		}
		return err
	})
	return v, err
}

// GEMM describes a row-major matrix product C = Alpha·op(A)·op(B) + Beta·C,
// optionally batched, computed by cuBLAS with f32 accumulation
// (CUBLAS_COMPUTE_32F; for f32 inputs no TF32). C is [M, N]; op(A) is
// [M, K], stored [M, K] or, with TransA, [K, M]; op(B) is [K, N], stored
// [K, N] or, with TransB, [N, K] (nn.Linear's weight [out, in] is B with
// TransB). LDA, LDB, LDC are row strides in elements (0: packed). Batch > 1
// repeats the product with the Stride* element offsets (0 strides reuse a
// matrix, e.g. one weight for every batch). In is the dtype of A and B (f32,
// bf16 or f16), Out that of C (In or f32).
type GEMM struct {
	M, N, K                   int
	TransA, TransB            bool
	LDA, LDB, LDC             int
	Batch                     int
	StrideA, StrideB, StrideC int64
	Alpha, Beta               float32
	In, Out                   tensor.DType
}

func cudaDataType(dt tensor.DType) (C.cudaDataType, bool) {
	switch dt {
	case tensor.F32:
		return 0, true // CUDA_R_32F
	case tensor.F16:
		return 2, true // CUDA_R_16F
	case tensor.BF16:
		return 14, true // CUDA_R_16BF
	}
	return 0, false
}

// MatMul runs g on c, a, b. Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ,
// so cuBLAS is called with the operands swapped and m, n = N, M (the
// standard trick, as PyTorch's at::cuda::blas does). It takes cuBLAS's
// own algorithm choice (CUBLAS_GEMM_DEFAULT), not one timed per shape:
// PyTorch's TunableOp, timing cuBLASLt's candidate algorithms for the
// bf16 linears of DeepSeek-V3's prefill of 4 × 1024 tokens on an H200
// (fused_qkv_a, q_b, kv_b, o, gate_up, down, the shared expert's two and
// lm_head), kept the default for all nine. It returns an error
// wrapping ErrBadArgument for inconsistent sizes or dtypes, ErrNoCUBLAS, or
// a *BLASError.
func (d *GPU) MatMul(g GEMM, c, a, b Ptr) error {
	if g.M <= 0 || g.N <= 0 || g.K <= 0 {
		return fmt.Errorf("%w: matmul [%d, %d] x [%d, %d]: sizes must be positive", ErrBadArgument, g.M, g.K, g.K, g.N)
	}
	if g.LDA == 0 {
		g.LDA = g.K
		if g.TransA {
			g.LDA = g.M
		}
	}
	if g.LDB == 0 {
		g.LDB = g.N
		if g.TransB {
			g.LDB = g.K
		}
	}
	if g.LDC == 0 {
		g.LDC = g.N
	}
	if g.Batch == 0 {
		g.Batch = 1
	}
	const maxInt32 = 1<<31 - 1
	for _, v := range []int{g.M, g.N, g.K, g.LDA, g.LDB, g.LDC, g.Batch} {
		if v > maxInt32 {
			return fmt.Errorf("%w: matmul dimension %d exceeds cuBLAS's 32-bit int", ErrBadArgument, v)
		}
	}
	if (g.TransA && g.LDA < g.M) || (!g.TransA && g.LDA < g.K) || (g.TransB && g.LDB < g.K) || (!g.TransB && g.LDB < g.N) || g.LDC < g.N {
		return fmt.Errorf("%w: matmul leading dimensions lda %d ldb %d ldc %d too small for M %d N %d K %d", ErrBadArgument, g.LDA, g.LDB, g.LDC, g.M, g.N, g.K)
	}
	in, ok := cudaDataType(g.In)
	if !ok {
		return fmt.Errorf("%w: matmul input dtype %s (want f32, bf16 or f16)", ErrBadArgument, g.In)
	}
	out, ok := cudaDataType(g.Out)
	if !ok || (g.Out != g.In && g.Out != tensor.F32) {
		return fmt.Errorf("%w: matmul output dtype %s for %s inputs (want %s or f32)", ErrBadArgument, g.Out, g.In, g.In)
	}
	opA, opB := C.cublasOperation_t(0), C.cublasOperation_t(0)
	if g.TransA {
		opA = 1
	}
	if g.TransB {
		opB = 1
	}
	return d.Do(func() error {
		h, err := d.cublas()
		if err != nil {
			return err
		}
		op := "cublasGemmEx"
		if g.Batch > 1 {
			op = "cublasGemmStridedBatchedEx"
		}
		s := C.hsdb_gemm(h.h, opB, opA, C.int(g.N), C.int(g.M), C.int(g.K), C.float(g.Alpha),
			C.ulonglong(b), in, C.int(g.LDB), C.ulonglong(a), in, C.int(g.LDA), C.float(g.Beta),
			C.ulonglong(c), out, C.int(g.LDC), C.longlong(g.StrideB), C.longlong(g.StrideA), C.longlong(g.StrideC), C.int(g.Batch))
		if err := blasCheck(op, s); err != nil {
			return fmt.Errorf("cuda:%d: matmul [%d, %d]x[%d, %d] %s->%s batch %d: %w", d.ordinal, g.M, g.K, g.K, g.N, g.In, g.Out, g.Batch, err)
		}
		return nil
	})
}

// Linear computes y[tokens, out] = x[tokens, in] · w[out, in]ᵀ, the GEMM of
// nn.Linear and of vLLM's Column/RowParallelLinear on one rank. x and w
// have dtype dt; y has dtype outDT (dt, or f32 for logits). See MatMul for
// the errors.
func (d *GPU) Linear(y, x, w Ptr, tokens, in, out int, dt, outDT tensor.DType) error {
	return d.MatMul(GEMM{M: tokens, N: out, K: in, TransB: true, Alpha: 1, In: dt, Out: outDT}, y, x, w)
}
