package cpu

import (
	"fmt"

	"hsdb/engine/backend"
)

// Embedding looks up ids in table [vocabShard, hidden] whose row 0 is id
// start; ids outside the shard give zero rows (vLLM VocabParallelEmbedding).
func (d *Device) Embedding(table backend.Tensor, ids []int32, start int) backend.Tensor {
	tt := host(table)
	V, H := tt.Rows(), tt.Cols()
	res, y := d.newOutput(true, len(ids), H) // ids outside the shard stay 0
	var scratch []float32
	for i, id := range ids {
		r := int(id) - start
		if r < 0 || r >= V {
			continue
		}
		copy(y[i*H:(i+1)*H], weightRows(tt, r, r+1, &scratch))
	}
	return res
}

// SliceCols copies columns [c0, c1) of x.
func (d *Device) SliceCols(x backend.Tensor, c0, c1 int) backend.Tensor {
	return Tensor{d.ToHost(x, 0, host(x).Rows(), c0, c1)}
}

// ConcatCols joins tensors of equal row count along columns.
func (d *Device) ConcatCols(xs ...backend.Tensor) backend.Tensor {
	rows, cols := host(xs[0]).Rows(), 0
	for _, x := range xs {
		if host(x).Rows() != rows {
			panic(&backend.DeviceError{Device: d.name, Op: "concat_cols", Err: fmt.Errorf("row counts %d and %d differ", rows, host(x).Rows())})
		}
		cols += host(x).Cols()
	}
	res, y := d.newOutput(false, rows, cols)
	o := 0
	for r := range rows {
		for _, x := range xs {
			c := host(x).Cols()
			o += copy(y[o:], f32(x)[r*c:(r+1)*c])
		}
	}
	return res
}

// GatherRows returns the rows x[idx[i]].
func (d *Device) GatherRows(x backend.Tensor, idx []int32) backend.Tensor {
	xt := host(x)
	c := xt.Cols()
	xv := f32(x)
	for _, r := range idx {
		if int(r) < 0 || int(r) >= xt.Rows() {
			panic(&backend.DeviceError{Device: d.name, Op: "gather_rows", Err: fmt.Errorf("row %d of %v", r, xt.Shape)})
		}
	}
	res, y := d.newOutput(false, len(idx), c)
	for i, r := range idx {
		copy(y[i*c:(i+1)*c], xv[int(r)*c:(int(r)+1)*c])
	}
	return res
}

// ScatterAddRows adds w[i]·src[i] into dst[idx[i]] in place.
func (d *Device) ScatterAddRows(dst, src backend.Tensor, idx []int32, w []float32) {
	dt, st := host(dst), host(src)
	c := dt.Cols()
	if st.Cols() != c || st.Rows() != len(idx) || (w != nil && len(w) != len(idx)) {
		panic(&backend.DeviceError{Device: d.name, Op: "scatter_add_rows", Err: fmt.Errorf("dst %v src %v with %d indices", dt.Shape, st.Shape, len(idx))})
	}
	dv, sv := f32(dst), f32(src)
	for i, r := range idx {
		wt := float32(1)
		if w != nil {
			wt = w[i]
		}
		drow := dv[int(r)*c : (int(r)+1)*c]
		for j, x := range sv[i*c : (i+1)*c] {
			drow[j] += wt * x
		}
	}
}

// CopyRows copies n rows from src[srcRow:] to dst[dstRow:].
func (d *Device) CopyRows(dst backend.Tensor, dstRow int, src backend.Tensor, srcRow, n int) {
	dt, st := host(dst), host(src)
	rb := dt.Cols() * dt.DType.Size()
	if st.Cols() != dt.Cols() || st.DType != dt.DType || dstRow+n > dt.Rows() || srcRow+n > st.Rows() {
		panic(&backend.DeviceError{Device: d.name, Op: "copy_rows", Err: fmt.Errorf("%d rows from %v@%d to %v@%d", n, st.Shape, srcRow, dt.Shape, dstRow)})
	}
	copy(dt.Data[dstRow*rb:(dstRow+n)*rb], st.Data[srcRow*rb:(srcRow+n)*rb])
}

// WriteRows copies row i of src into row rows[i] of dst.
func (d *Device) WriteRows(dst, src backend.Tensor, rows []int32) {
	dt, st := host(dst), host(src)
	rb := dt.Cols() * dt.DType.Size()
	if st.Cols() != dt.Cols() || st.DType != dt.DType || st.Rows() != len(rows) {
		panic(&backend.DeviceError{Device: d.name, Op: "write_rows", Err: fmt.Errorf("%v into %v at %d rows", st.Shape, dt.Shape, len(rows))})
	}
	for i, r := range rows {
		if int(r) < 0 || int(r) >= dt.Rows() {
			panic(&backend.DeviceError{Device: d.name, Op: "write_rows", Err: fmt.Errorf("row %d outside %v", r, dt.Shape)})
		}
		copy(dt.Data[int(r)*rb:(int(r)+1)*rb], st.Data[i*rb:(i+1)*rb])
	}
}

// WriteMLAKV writes multi-head latent attention's keys [k_nope | k_pe] and
// values per head into the cache rows a.Rows (backend.Device.WriteMLAKV).
func (d *Device) WriteMLAKV(k, v, kv, kPe backend.Tensor, a *backend.MLAKVArgs) {
	kt, vt, st, pt := host(k), host(v), host(kv), host(kPe)
	H, dk, dkv := a.Heads, a.Nope+a.Rope, a.Nope+a.V
	T := len(a.Rows)
	if H <= 0 || a.Nope < 0 || a.Rope < 0 || a.V < 0 || kt.Cols() != H*dk || vt.Cols() != H*a.V || kt.Rows() != vt.Rows() ||
		st.Rows() != T || st.Cols() != H*dkv || pt.Rows() != T || pt.Cols() != a.Rope {
		panic(&backend.DeviceError{Device: d.name, Op: "write_mla_kv", Err: fmt.Errorf("k %v v %v from kv %v k_pe %v for %d heads of %d+%d / %d at %d rows",
			kt.Shape, vt.Shape, st.Shape, pt.Shape, H, a.Nope, a.Rope, a.V, T)})
	}
	kd, vd, sv, pv := f32(k), f32(v), f32(kv), f32(kPe)
	for i, r := range a.Rows {
		if int(r) < 0 || int(r) >= kt.Rows() {
			panic(&backend.DeviceError{Device: d.name, Op: "write_mla_kv", Err: fmt.Errorf("row %d outside %v", r, kt.Shape)})
		}
		src, pe := sv[i*H*dkv:(i+1)*H*dkv], pv[i*a.Rope:(i+1)*a.Rope]
		krow, vrow := kd[int(r)*H*dk:(int(r)+1)*H*dk], vd[int(r)*H*a.V:(int(r)+1)*H*a.V]
		for h := range H {
			s := src[h*dkv : (h+1)*dkv]
			copy(krow[h*dk:], s[:a.Nope])
			copy(krow[h*dk+a.Nope:(h+1)*dk], pe)
			copy(vrow[h*a.V:(h+1)*a.V], s[a.Nope:])
		}
	}
}
