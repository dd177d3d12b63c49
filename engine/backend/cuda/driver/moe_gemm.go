//go:build cuda

package driver

/*
#include <stdlib.h>
#include "shim_moe.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"hsdb/engine/tensor"
)

// moeGEMM is how ExpertGEMMs runs the experts' GEMMs, set by
// HSDB_MOE_GEMM: "" (default) is "streams" for expert weights of at least
// moeStreamsMinWeight elements and "grouped" below; "streams" spreads one
// cublasGemmEx per expert over HSDB_MOE_STREAMS side streams forked from
// and joined into the GPU's stream, so that the small GEMMs (about 128
// rows each) fill the GPU together; "loop" issues the same GEMMs one after
// another on the GPU's stream; "grouped" makes one
// cublasGemmGroupedBatchedEx call per projection, where the cuBLAS has it
// (else the loop). Measured on one H200 with DeepSeek-V3's shapes (256
// experts, 4096 tokens, top 8; scripts/bench/bench-deepseek.sh,
// HSDB_CUDA_PROFILE=1): at --tp 1 ([4096, 7168] and [7168, 2048] expert
// weights) a prefill takes 27.9 ms on side streams (routed experts 8.6-9.0
// ms of device time), 29.1 ms on the loop (10.4 ms), 33.3 ms grouped; at
// --tp 8 on virtual ranks ([512, 7168] and [7168, 256]: 4096 tiny GEMMs
// per layer, bound by launching them) 54.4 ms grouped, 94.4 ms on the
// loop, 100.0 ms on side streams. "cublas" and "kernel" mean the default
// here: they choose between engine/backend/cuda's own grouped kernel and
// these GEMMs, and "kernel" falls back here for expert sets it does not take.
var moeGEMM = os.Getenv("HSDB_MOE_GEMM")

// moeStreamsMinWeight is the smallest expert weight (n·k elements) whose
// GEMMs go to the side streams by default; smaller ones go to one grouped
// GEMM (see moeGEMM).
const moeStreamsMinWeight = 8 << 20

// moeStreams are each GPU's side streams for the experts' GEMMs, made on
// first use on the GPU's thread; they live as long as the process (the
// GPUs are shared process-wide).
var moeStreams = map[*GPU]*C.struct_hsdb_moe_streams{}
var moeStreamsMu sync.Mutex

// sideStreams returns g's side streams (GPU thread), or nil when they
// cannot be made (the caller falls back to the loop).
func (d *GPU) sideStreams() *C.struct_hsdb_moe_streams {
	moeStreamsMu.Lock()
	defer moeStreamsMu.Unlock()
	m, ok := moeStreams[d]
	if !ok {
		m = C.hsdb_moe_streams_new()
		moeStreams[d] = m
	}
	return m
}

var (
	groupedOnce sync.Once
	groupedOK   bool
)

// haveGrouped reports whether the opened cuBLAS has
// cublasGemmGroupedBatchedEx (after the handle exists: blasLib is set).
func haveGrouped() bool {
	groupedOnce.Do(func() {
		if blasLib == "" {
			return
		}
		lib := C.CString(blasLib)
		defer C.free(unsafe.Pointer(lib))
		groupedOK = C.hsdb_moe_open(lib) == 1
	})
	return groupedOK
}

// ExpertGEMMs computes, for each expert e with rows[e] > 0, the rows of
// c [Σrows, n] that belong to it as a's rows [Σrows, k] times w[e]ᵀ (w[e]
// [n, k], nn.Linear's layout): the grouped GEMM of one MoE projection,
// expert blocks consecutive in id order. scratch holds 24·len(w) bytes of
// device memory for the problems' address arrays (grouped mode). dt: f32,
// bf16 or f16.
func (d *GPU) ExpertGEMMs(c, a Ptr, w []Ptr, rows []int32, n, k int, dt tensor.DType, scratch Ptr) error {
	cdt, ok := cudaDataType(dt)
	if !ok {
		return fmt.Errorf("%w: expert gemm dtype %s", ErrBadArgument, dt)
	}
	if len(w) != len(rows) || n <= 0 || k <= 0 || n > 1<<31-1 || k > 1<<31-1 {
		return fmt.Errorf("%w: expert gemm: %d weights for %d experts, n %d, k %d", ErrBadArgument, len(w), len(rows), n, k)
	}
	if len(w) == 0 {
		return nil
	}
	es := int64(dt.Size())
	return d.Do(func() error {
		h, err := d.cublas()
		if err != nil {
			return err
		}
		mode := moeGEMM
		if mode == "" || mode == "cublas" || mode == "kernel" {
			mode = "grouped"
			if int64(n)*int64(k) >= moeStreamsMinWeight {
				mode = "streams"
			}
		}
		if mode == "grouped" && scratch != 0 && haveGrouped() {
			// Problems: the experts with rows, their A, W and C addresses.
			var nz []C.int
			addr := make([]byte, 0, 24*len(w))
			var as, ws, cs []uint64
			off := int64(0)
			for e, r := range rows {
				if r > 0 {
					nz = append(nz, C.int(r))
					as = append(as, uint64(a.Add(off*int64(k)*es)))
					ws = append(ws, uint64(w[e]))
					cs = append(cs, uint64(c.Add(off*int64(n)*es)))
				}
				off += int64(r)
			}
			if len(nz) == 0 {
				return nil
			}
			for _, v := range [][]uint64{as, ws, cs} {
				for _, x := range v {
					addr = binary.LittleEndian.AppendUint64(addr, x)
				}
			}
			if err := d.CopyToDevice(scratch, addr); err != nil {
				return err
			}
			m := int64(8 * len(nz))
			s := C.hsdb_gemm_experts_grouped(h.h, C.int(len(nz)), &nz[0], C.int(n), C.int(k),
				C.ulonglong(scratch), C.ulonglong(scratch.Add(m)), C.ulonglong(scratch.Add(2*m)), cdt)
			if err := blasCheck("cublasGemmGroupedBatchedEx", s); err != nil {
				return fmt.Errorf("cuda:%d: grouped expert gemms of %d experts [*, %d]x[%d, %d]ᵀ %s: %w", d.ordinal, len(nz), k, n, k, dt, err)
			}
			return nil
		}
		ws := make([]C.ulonglong, len(w))
		for i, p := range w {
			ws[i] = C.ulonglong(p)
		}
		rs := make([]C.int, len(rows))
		for i, r := range rows {
			rs[i] = C.int(r)
		}
		var s C.cublasStatus_t
		if m := d.sideStreams(); mode == "streams" && m != nil {
			s = C.hsdb_gemm_experts_multi(m, d.stream, C.int(len(w)), &rs[0], &ws[0], C.int(n), C.int(k), C.ulonglong(a), C.ulonglong(c), cdt, C.int(es))
		} else {
			s = C.hsdb_gemm_experts(h.h, C.int(len(w)), &rs[0], &ws[0], C.int(n), C.int(k), C.ulonglong(a), C.ulonglong(c), cdt, C.int(es))
		}
		if err := blasCheck("cublasGemmEx", s); err != nil {
			return fmt.Errorf("cuda:%d: expert gemms of %d experts [*, %d]x[%d, %d]ᵀ %s: %w", d.ordinal, len(w), k, n, k, dt, err)
		}
		return nil
	})
}
