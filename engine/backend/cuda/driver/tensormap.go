//go:build cuda

package driver

/*
#include <stdlib.h>
#include "shim_driver.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// TensorMap is a CUtensorMap: the 128-byte descriptor of a tensor in
// device memory that the Tensor Memory Accelerator (compute capability
// 9.0) copies boxes of into shared memory (cp.async.bulk.tensor). Opaque;
// kernels/moe_tma.cu reads it from device memory.
type TensorMap [128]byte

// The cuTensorMapEncodeTiled arguments TensorMapBF16 uses (cuda.h 12.x:
// CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion).
const (
	tmapBF16       = 9 // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
	tmapSwizzle128 = 3 // CU_TENSOR_MAP_SWIZZLE_128B
	tmapL2Promo256 = 3 // CU_TENSOR_MAP_L2_PROMOTION_L2_256B
)

// TensorMapBF16 encodes the tensor map of a row-major bf16 matrix [rows,
// cols] at p, copied in boxes of boxRows × 64 columns (128 bytes a row)
// into shared memory in the 128-byte swizzle: row r of a box at r·128,
// its 16-byte chunk c at ((c ^ r%8)·16), the K-major layout
// kernels/wgmma.cuh's wg_desc describes (for a 1024-byte aligned box).
// Boxes reaching past the matrix are filled with zeros. The driver
// encodes it on the device thread (it wants the context current). Errors:
// the driver's *Error (CUDA_ERROR_NOT_FOUND when it predates CUDA 12.0 and
// has no cuTensorMapEncodeTiled, CUDA_ERROR_INVALID_VALUE for an address
// or row pitch not a multiple of 16 bytes), or ErrBadArgument for sizes
// the TMA cannot describe (boxRows outside 1..256, rows or cols outside
// 1..2³²).
func (d *GPU) TensorMapBF16(p Ptr, rows, cols int64, boxRows int) (TensorMap, error) {
	var m TensorMap
	if rows <= 0 || cols <= 0 || rows > 1<<32 || cols > 1<<32 || boxRows <= 0 || boxRows > 256 {
		return m, fmt.Errorf("%w: tensor map of a bf16 [%d, %d] matrix in boxes of %d rows", ErrBadArgument, rows, cols, boxRows)
	}
	err := d.Do(func() error { return encodeBF16(&m, p, rows, cols, boxRows) })
	return m, err
}

func encodeBF16(m *TensorMap, p Ptr, rows, cols int64, boxRows int) error {
	// The map is written into C memory: cgo may not hand C a Go pointer
	// that it keeps, and the driver wants 64-byte alignment.
	buf := C.aligned_alloc(64, 128)
	if buf == nil {
		return fmt.Errorf("cuTensorMapEncodeTiled: no host memory for the map")
	}
	defer C.free(buf)
	dims := [2]C.ulonglong{C.ulonglong(cols), C.ulonglong(rows)}
	strides := [1]C.ulonglong{C.ulonglong(2 * cols)}
	box := [2]C.uint{64, C.uint(boxRows)}
	estr := [2]C.uint{1, 1}
	r := C.hsdb_tensor_map_tiled(buf, tmapBF16, 2, C.ulonglong(p), &dims[0], &strides[0], &box[0], &estr[0],
		0, tmapSwizzle128, tmapL2Promo256, 0)
	if r != 0 {
		return &Error{Op: "cuTensorMapEncodeTiled", Code: int(r), Name: C.GoString(C.hsdb_cu_error_name(r)), Msg: C.GoString(C.hsdb_cu_error_string(r))}
	}
	copy(m[:], unsafe.Slice((*byte)(buf), 128))
	return nil
}
