package model

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// Linear loads rows [rows[0], rows[1]) and columns [cols[0], cols[1]) of the
// linear weight n (under the loader's prefix) whose logical shape is [out,
// in]: a column-parallel linear's output rows, or a row-parallel linear's
// input columns (at most one of the two ranges is partial). When the
// checkpoint stores the weight quantized (l.Quant returns it), the rank's
// rows or columns are sliced in the quantized form and handed to the device
// with Device.UploadQuantized; a shard boundary that does not fall on a
// scale block is sliced after dequantizing instead (the same values). Dense
// weights load as Rows, Cols or Full do.
func (l *Loader) Linear(n string, out, in int, rows, cols [2]int) backend.Tensor {
	if *l.err != nil {
		return nil
	}
	allRows, allCols := rows == [2]int{0, out}, cols == [2]int{0, in}
	if !allRows && !allCols {
		return l.Fail(fmt.Errorf("%w: tensor %s: rows %v and columns %v of [%d, %d]: a rank holds whole rows or whole columns", ErrWeight, l.Name(n), rows, cols, out, in))
	}
	if l.Quant != nil {
		name := l.Name(n)
		q, err := l.Quant.Load(l.Src, name, out, in)
		if err != nil {
			return l.Fail(fmt.Errorf("%w: %w", ErrWeight, err))
		}
		if q != nil {
			return l.quantized(name, q, rows, cols)
		}
	}
	shape := []int{out, in}
	switch {
	case allRows && allCols:
		return l.Full(n, shape...)
	case allCols:
		return l.Rows(n, shape, rows[0], rows[1])
	}
	return l.Cols(n, shape, cols[0], cols[1])
}

// quantized uploads rows × cols of q, the quantized weight name.
func (l *Loader) quantized(name string, q *tensor.Quantized, rows, cols [2]int) backend.Tensor {
	if err := q.Check(); err != nil {
		return l.Fail(fmt.Errorf("%w: %s: %w", ErrWeight, name, err))
	}
	l.Report.Dequantized = append(l.Report.Dequantized, name)
	l.Report.Formats = append(l.Report.Formats, q.Format.String())
	l.Report.Format = l.Quant.String()
	s, err := q, error(nil)
	if rows != [2]int{0, q.Shape[0]} {
		s, err = s.SliceRows(rows[0], rows[1])
	}
	if err == nil && cols != [2]int{0, q.Shape[1]} {
		s, err = s.SliceCols(cols[0], cols[1])
	}
	if err != nil { // not on a block boundary: dequantize, then slice
		t := q.Dequantize()
		if rows != [2]int{0, q.Shape[0]} {
			t = t.SliceRows(rows[0], rows[1])
		} else {
			t = sliceCols(t, cols[0], cols[1])
		}
		return l.finish(name, t)
	}
	// A device that dequantizes makes it float32 unless --dtype says
	// otherwise, as the loader always widened quantized weights.
	dt := l.DType
	if dt == tensor.Invalid {
		dt = tensor.F32
	}
	if err := quantOverflow(name, s, dt); err != nil {
		return l.Fail(err)
	}
	x := l.Dev.UploadQuantized(s, dt)
	if x.DType().IsFloat() { // dequantized on upload
		l.Report.Bytes += int64(tensor.Numel(x.Shape())) * int64(x.DType().Size())
	} else { // kept quantized (the CUDA backend's int4): data plus scales
		l.Report.Bytes += s.Bytes()
	}
	return x
}
