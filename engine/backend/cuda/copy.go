//go:build cuda

package cuda

import "hsdb/engine/backend/cuda/driver"

import "fmt"

// copyUnit returns the widest element size in bytes (16, 8, 4, 2 or 1)
// that divides every one of vals: the unit copy2d moves.
func copyUnit(vals ...int64) int64 {
	for _, u := range []int64{16, 8, 4, 2} {
		ok := true
		for _, v := range vals {
			if v%u != 0 {
				ok = false
				break
			}
		}
		if ok {
			return u
		}
	}
	return 1
}

// Copy2D copies rows blocks of rowBytes bytes: row r from src + r*srcPitch
// to dst + r*dstPitch, in stream order (cudaMemcpy2DAsync's contract, done
// by kernels/copy.cu). srcPitch 0 copies the one row at src to every row
// (a broadcast). Bytes move unchanged whatever the dtype. A copy whose rows
// are contiguous on both sides is one cuMemcpyDtoDAsync. It returns an error
// wrapping ErrBadArgument for negative sizes or a pitch shorter than a row
// (other than a source pitch of 0).
func (d *GPU) Copy2D(dst driver.Ptr, dstPitch int64, src driver.Ptr, srcPitch int64, rows int, rowBytes int64) error {
	if rows < 0 || rowBytes < 0 || dstPitch < rowBytes || (srcPitch != 0 && srcPitch < rowBytes) {
		return fmt.Errorf("%w: copy2d of %d rows of %d bytes with pitches %d (dst) and %d (src)", driver.ErrBadArgument, rows, rowBytes, dstPitch, srcPitch)
	}
	if rows == 0 || rowBytes == 0 {
		return nil
	}
	if rows == 1 || (dstPitch == rowBytes && srcPitch == rowBytes) {
		return d.CopyDevice(dst, src, int64(rows)*rowBytes)
	}
	u := copyUnit(int64(dst), int64(src), dstPitch, srcPitch, rowBytes)
	cols := rowBytes / u
	return d.Do(func() error {
		return d.launch("copy", fmt.Sprintf("copy2d_u%d", 8*u), d.flatGrid(int64(rows)*cols), dim3{x: 256}, 0,
			dst, src, int64(rows), cols, dstPitch/u, srcPitch/u)
	})
}
