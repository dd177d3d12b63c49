//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// Row-wise ops (gather, scatter-add, copies and writes of rows) and the
// read-backs a debugger uses at a stop (ToHost, Moments).

// checkIndices panics unless every index is in [0, n) (n rows of what).
func (d *Device) checkIndices(op string, idx []int32, n int, what string) {
	for i, r := range idx {
		if r < 0 || int(r) >= n {
			d.badArg(op, "index %d is %d, outside the %d rows of %s", i, r, n, what)
		}
	}
}

// GatherRows returns x[idx[i]] for each i: [len(idx), cols].
func (d *Device) GatherRows(x backend.Tensor, idx []int32) backend.Tensor {
	const op = "gather_rows"
	xt := d.get(op, x)
	d.float(op, xt)
	d.checkIndices(op, idx, xt.rows(), fmt.Sprint(xt.shape))
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(xt.dt, len(idx), xt.cols()); err != nil || len(idx) == 0 {
			return err
		}
		ip, err := d.uploadI32(idx)
		if err != nil {
			return err
		}
		return d.g.GatherRows(y.ptr(), xt.ptr(), ip, len(idx), xt.cols(), xt.rows(), xt.dt)
	})
	return y
}

// scatterRows writes row i of src [n, width] to row rows[i] of dst
// [dstRows, width] (GPU thread): kernels/attention.cu's kv_cache_write
// over a single slot of dstRows positions. rows is a device int32 array.
func (d *Device) scatterRows(dst, src, rows driver.Ptr, n, width, dstRows int, dt tensor.DType) error {
	sfx, err := suffix("scatter_rows", dt)
	if err != nil || n == 0 || width == 0 {
		return err
	}
	z, err := d.zerosI32(n)
	if err != nil {
		return err
	}
	return d.g.launch("attention", "kv_cache_write_"+sfx, dim3{x: uint32(n)}, dim3{x: rowThreads(width)}, 0,
		dst, src, z, rows, int32(width), int64(width), int32(1), int32(dstRows))
}

// ScatterAddRows adds w[i]·src[i] to dst[idx[i]] in place (MoE combine; w
// nil means ones). Rows named more than once get every addend, summed in
// f32 in index order and rounded once: the touched rows of dst are
// gathered, combined by kernels/moe.cu's moe_combine and written back.
func (d *Device) ScatterAddRows(dst, src backend.Tensor, idx []int32, w []float32) {
	const op = "scatter_add_rows"
	dx, sx := d.get(op, dst), d.get(op, src)
	d.float(op, dx)
	if sx.dt != dx.dt || sx.cols() != dx.cols() || sx.rows() != len(idx) || (w != nil && len(w) != len(idx)) {
		d.badArg(op, "dst %v %s src %v %s with %d indices and %d weights", dx.shape, dx.dt, sx.shape, sx.dt, len(idx), len(w))
	}
	d.checkIndices(op, idx, dx.rows(), "dst "+fmt.Sprint(dx.shape))
	if len(idx) == 0 || dx.cols() == 0 {
		return
	}
	// touched[u] is a dst row; lists[u] the source rows adding to it.
	var touched []int32
	var lists [][]int32
	at := map[int32]int{}
	for i, r := range idx {
		u, ok := at[r]
		if !ok {
			u = len(touched)
			at[r] = u
			touched = append(touched, r)
			lists = append(lists, nil)
		}
		lists[u] = append(lists[u], int32(i))
	}
	topk := 0
	for _, l := range lists {
		topk = max(topk, len(l))
	}
	rows := make([]int32, len(touched)*topk)
	weights := make([]float32, len(touched)*topk)
	for u, l := range lists {
		for k := range topk {
			j := u*topk + k
			rows[j] = -1
			if k < len(l) {
				rows[j] = l[k]
				weights[j] = 1
				if w != nil {
					weights[j] = w[l[k]]
				}
			}
		}
	}
	cols := dx.cols()
	d.do(op, func() error {
		tp, err := d.uploadI32(touched)
		if err != nil {
			return err
		}
		rp, err := d.uploadI32(rows)
		if err != nil {
			return err
		}
		wp, err := d.uploadF32(weights)
		if err != nil {
			return err
		}
		n := int64(len(touched) * cols * dx.dt.Size())
		tmp, err := d.mem.alloc(n, driver.Activations)
		if err != nil {
			return err
		}
		defer d.mem.free([]block{{tmp, driver.Activations}})
		if err := d.g.GatherRows(tmp, dx.ptr(), tp, len(touched), cols, dx.rows(), dx.dt); err != nil {
			return err
		}
		if err := d.g.MoECombine(tmp, sx.ptr(), rp, wp, len(touched), topk, cols, sx.rows(), true, dx.dt); err != nil {
			return err
		}
		return d.scatterRows(dx.ptr(), tmp, tp, len(touched), cols, dx.rows(), dx.dt)
	})
}

// CopyRows copies n rows of src from srcRow into dst from dstRow (same
// columns and dtype).
func (d *Device) CopyRows(dst backend.Tensor, dstRow int, src backend.Tensor, srcRow, n int) {
	const op = "copy_rows"
	dx, sx := d.get(op, dst), d.get(op, src)
	if sx.cols() != dx.cols() || sx.dt != dx.dt || n < 0 || dstRow < 0 || srcRow < 0 || dstRow+n > dx.rows() || srcRow+n > sx.rows() {
		d.badArg(op, "%d rows from %v %s at %d to %v %s at %d", n, sx.shape, sx.dt, srcRow, dx.shape, dx.dt, dstRow)
	}
	rb := int64(dx.cols() * dx.dt.Size())
	d.do(op, func() error {
		return d.g.CopyDevice(dx.ptr().Add(int64(dstRow)*rb), sx.ptr().Add(int64(srcRow)*rb), int64(n)*rb)
	})
}

// WriteRows copies row i of src into row rows[i] of dst (the KV-cache
// write).
func (d *Device) WriteRows(dst, src backend.Tensor, rows []int32) {
	const op = "write_rows"
	dx, sx := d.get(op, dst), d.get(op, src)
	d.float(op, dx)
	if sx.cols() != dx.cols() || sx.dt != dx.dt || sx.rows() != len(rows) {
		d.badArg(op, "%v %s into %v %s at %d rows", sx.shape, sx.dt, dx.shape, dx.dt, len(rows))
	}
	d.checkIndices(op, rows, dx.rows(), "dst "+fmt.Sprint(dx.shape))
	d.do(op, func() error {
		rp, err := d.uploadI32(rows)
		if err != nil {
			return err
		}
		return d.scatterRows(dx.ptr(), sx.ptr(), rp, len(rows), dx.cols(), dx.rows(), dx.dt)
	})
}

// checkSlice panics unless [r0:r1, c0:c1] lies inside x.
func (d *Device) checkSlice(op string, x *Tensor, r0, r1, c0, c1 int) {
	if r0 < 0 || r1 > x.rows() || r0 > r1 || c0 < 0 || c1 > x.cols() || c0 > c1 {
		d.badArg(op, "slice [%d:%d, %d:%d] out of range for %v", r0, r1, c0, c1, x.shape)
	}
}

// widenOnDeviceMax is the largest bf16/f16 read (in f32 bytes) that ToHost
// widens on its way out rather than after a plain copy: a bf16 slice
// crosses the bus at 2 bytes an element into pinned staging and is widened
// from there into the result by the host (toHostBF16: a prefill's
// last-token logits, 1 MB instead of 2; DeepSeek-V3's bench prefill went
// from 21.0-21.3 ms to 20.4-20.6 with it); an f16 slice is cast on the device and its f32 copy lands
// in the result as it is (toHostWidened). Larger reads cross the bus at 2
// bytes an element into the pageable result and widen on the host.
const widenOnDeviceMax = 4 << 20

// ToHost copies rows [r0,r1) and columns [c0,c1) of t to a new host f32
// tensor [r1-r0, c1-c0]; only that slice crosses the bus (a column slice
// is packed on the device first). The widening of bf16/f16 is exact
// whichever way widenOnDeviceMax picks.
func (d *Device) ToHost(t backend.Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
	const op = "to_host"
	x := d.get(op, t)
	d.checkSlice(op, x, r0, r1, c0, c1)
	if fp8Of(x) != nil {
		return d.fp8ToHost(x, r0, r1, c0, c1)
	}
	if int4Of(x) != nil {
		return d.int4ToHost(x, r0, r1, c0, c1)
	}
	if n := int64(r1-r0) * int64(c1-c0); (x.dt == tensor.BF16 || x.dt == tensor.F16) && n > 0 && 4*n <= widenOnDeviceMax {
		if x.dt == tensor.BF16 {
			return d.toHostBF16(x, r0, r1, c0, c1)
		}
		return d.toHostWidened(x, r0, r1, c0, c1)
	}
	h := tensor.New(x.dt, r1-r0, c1-c0)
	if len(h.Data) > 0 {
		d.do(op, func() error {
			src, release, err := d.packedSlice(x, r0, r1, c0, c1)
			if err != nil {
				return err
			}
			defer release()
			return d.g.CopyToHost(h.Data, src)
		})
	}
	if x.dt == tensor.F32 {
		return h
	}
	return tensor.FromF32(h.ToF32(), r1-r0, c1-c0)
}

// packedSlice returns the device address of rows [r0,r1) × columns
// [c0,c1) of x as one contiguous [r1-r0, c1-c0] block in x's dtype: x's
// own memory when the slice spans whole rows, else a temporary the
// columns are packed into (one strided copy). release frees the
// temporary (a no-op otherwise); call it when the reads queued on it are
// queued. GPU thread only; errors are the pool's or the copy's.
func (d *Device) packedSlice(x *Tensor, r0, r1, c0, c1 int) (src driver.Ptr, release func(), err error) {
	es, cols := int64(x.dt.Size()), int64(x.cols())
	src = x.ptr().Add((int64(r0)*cols + int64(c0)) * es)
	if c0 == 0 && c1 == x.cols() {
		return src, func() {}, nil
	}
	w := int64(c1-c0) * es
	tmp, err := d.mem.alloc(int64(r1-r0)*w, driver.Activations)
	if err != nil {
		return 0, nil, err
	}
	release = func() { d.mem.free([]block{{tmp, driver.Activations}}) }
	if err := d.g.Copy2D(tmp, w, src, cols*es, r1-r0, w); err != nil {
		release()
		return 0, nil, err
	}
	return tmp, release, nil
}

// toHostBF16 is ToHost of a small bf16 slice (see widenOnDeviceMax):
// packed on the device when it is a column slice, copied at 2 bytes an
// element into pinned staging, and widened from there straight into the
// result (a bf16 is the high half of its f32), in parallel chunks; the
// result's pages are faulted in while the device is still busy.
func (d *Device) toHostBF16(x *Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
	const op = "to_host"
	h := tensor.New(tensor.F32, r1-r0, c1-c0)
	n := int64(r1-r0) * int64(c1-c0)
	d.do(op, func() error {
		src, release, err := d.packedSlice(x, r0, r1, c0, c1)
		if err != nil {
			return err
		}
		defer release()
		out := h.F32()
		return d.g.ReadSmallWith(2*n, src, func() { driver.TouchPages(h.Data) }, func(host []byte) {
			widenBF16(out, unsafe.Slice((*uint16)(unsafe.Pointer(&host[0])), len(out)))
		})
	})
	return h
}

// widenBF16Chunk is the fewest elements widenBF16 gives a goroutine of its
// own: below it starting one costs more than the loop (a few µs for 64 Ki
// elements).
const widenBF16Chunk = 64 << 10

// widenBF16 sets dst[i] to the f32 of the bf16 bit pattern src[i]
// (len(dst) == len(src)), split over up to GOMAXPROCS goroutines.
func widenBF16(dst []float32, src []uint16) {
	body := func(lo, hi int) {
		d, s := dst[lo:hi], src[lo:hi]
		for i := range d {
			d[i] = math.Float32frombits(uint32(s[i]) << 16)
		}
	}
	w := min(runtime.GOMAXPROCS(0), len(dst)/widenBF16Chunk)
	if w <= 1 {
		body(0, len(dst))
		return
	}
	size := (len(dst) + w - 1) / w
	var wg sync.WaitGroup
	for lo := size; lo < len(dst); lo += size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, min(lo+size, len(dst)))
		}()
	}
	body(0, min(size, len(dst)))
	wg.Wait()
}

// toHostWidened is ToHost of a small f16 slice: packed (a column
// slice) and cast to f32 on the device, then copied into the result.
func (d *Device) toHostWidened(x *Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
	const op = "to_host"
	h := tensor.New(tensor.F32, r1-r0, c1-c0)
	n := int64(len(h.Data) / 4)
	d.do(op, func() error {
		src, release, err := d.packedSlice(x, r0, r1, c0, c1)
		if err != nil {
			return err
		}
		defer release()
		tmp, err := d.mem.alloc(4*n, driver.Activations)
		if err != nil {
			return err
		}
		defer d.mem.free([]block{{tmp, driver.Activations}})
		if err := d.g.Cast(tmp, src, n, x.dt, tensor.F32); err != nil {
			return err
		}
		return d.g.CopyToHost(h.Data, tmp)
	})
	return h
}

// Moments reduces rows [r0,r1) × columns [c0,c1) of t on the device
// (kernels/stats.cu); only the 72-byte result crosses to the host.
func (d *Device) Moments(t backend.Tensor, r0, r1, c0, c1 int) tensor.Moments {
	const op = "moments"
	x := d.get(op, t)
	d.float(op, x)
	d.checkSlice(op, x, r0, r1, c0, c1)
	var m tensor.Moments
	d.do(op, func() error {
		var err error
		m, err = d.g.Moments(x.ptr(), x.dt, x.rows(), x.cols(), r0, r1, c0, c1)
		return err
	})
	return m
}
