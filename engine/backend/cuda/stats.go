//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"math"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// momentsBytes is the size of kernels/stats.cu's struct moments: four int64
// then five float64, the field order of tensor.Moments.
const momentsBytes = 72

// Moments computes the one-pass statistics of the slice x[r0:r1, c0:c1] of
// a row-major [rows, cols] tensor of dtype dt on the device: element, NaN,
// ±Inf and zero counts, and over the finite elements the f64 sum, sum of
// squares, min, max and absmax, field for field tensor.Moments. Only the
// 72-byte result crosses to the host (through pinned memory). It returns
// an error wrapping ErrBadArgument for a slice outside the tensor.
func (d *GPU) Moments(x driver.Ptr, dt tensor.DType, rows, cols, r0, r1, c0, c1 int) (tensor.Moments, error) {
	var m tensor.Moments
	sfx, err := suffix("stats", dt)
	if err != nil {
		return m, err
	}
	if r0 < 0 || r1 < r0 || r1 > rows || c0 < 0 || c1 < c0 || c1 > cols {
		return m, fmt.Errorf("%w: stats: slice [%d:%d, %d:%d] of [%d, %d]", driver.ErrBadArgument, r0, r1, c0, c1, rows, cols)
	}
	if r1 == r0 || c1 == c0 {
		return m, nil
	}
	// Columns over gy blocks (each thread about 8 elements a row), rows
	// over gx, about four blocks per SM in all.
	w := c1 - c0
	gy := min(max((w+2047)/2048, 1), 64)
	gx := min(max(4*max(d.SMs(), 1)/gy, 1), r1-r0)
	err = d.Do(func() error {
		part, err := d.AllocBlock(int64(gx*gy+1)*momentsBytes, driver.Activations)
		if err != nil {
			return err
		}
		defer d.FreeBlock(part, driver.Activations)
		final := part.Add(int64(gx*gy) * momentsBytes)
		if err := d.launch("stats", "stats_"+sfx, dim3{x: uint32(gx), y: uint32(gy)}, dim3{x: 256}, 0,
			part, x, int64(cols), int64(r0), int64(r1), int64(c0), int64(c1)); err != nil {
			return err
		}
		if err := d.launch("stats", "stats_final", dim3{x: 1}, dim3{x: 256}, 0, final, part, int32(gx*gy)); err != nil {
			return err
		}
		var host [momentsBytes]byte
		if err := d.ReadSmall(host[:], final); err != nil {
			return err
		}
		m = decodeMoments(host[:])
		return nil
	})
	return m, err
}

func decodeMoments(b []byte) tensor.Moments {
	i := func(k int) int64 { return int64(binary.LittleEndian.Uint64(b[8*k:])) }
	f := func(k int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[8*k:])) }
	return tensor.Moments{Count: i(0), NaN: i(1), Inf: i(2), Zeros: i(3), Sum: f(4), SumSq: f(5), Min: f(6), Max: f(7), AbsMax: f(8)}
}
