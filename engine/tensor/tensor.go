package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unsafe"
)

// Tensor is a dense row-major host tensor: Shape lists the sizes, outermost
// first ([tokens, hidden] means tokens rows of hidden elements), and Data
// holds product(Shape) × DType.Size() little-endian bytes. Data may alias a
// memory-mapped file; such a tensor must be treated as read-only.
type Tensor struct {
	Shape []int
	DType DType
	Data  []byte
}

// Numel returns the number of elements of a shape (1 for a scalar shape []).
func Numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Numel returns the number of elements of t.
func (t *Tensor) Numel() int { return Numel(t.Shape) }

// Rows returns the size of the first dimension (1 for a scalar) and Cols
// the product of the others: the 2-D view [rows, cols] every op uses.
func (t *Tensor) Rows() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[0]
}

// Cols returns the product of all dimensions but the first.
func (t *Tensor) Cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return Numel(t.Shape[1:])
}

// New allocates a zeroed tensor of the given dtype and shape.
func New(dt DType, shape ...int) *Tensor {
	return &Tensor{Shape: append([]int(nil), shape...), DType: dt, Data: make([]byte, Numel(shape)*dt.Size())}
}

// FromF32 wraps a float32 slice (not copied) as an F32 tensor; len(v) must
// equal product(shape).
func FromF32(v []float32, shape ...int) *Tensor {
	if Numel(shape) != len(v) {
		panic(fmt.Sprintf("tensor.FromF32: %d values for shape %v", len(v), shape))
	}
	return &Tensor{Shape: append([]int(nil), shape...), DType: F32, Data: f32Bytes(v)}
}

// FromI64 copies int64 values into a new I64 tensor of the given shape.
func FromI64(v []int64, shape ...int) *Tensor {
	t := New(I64, shape...)
	for i, x := range v {
		binary.LittleEndian.PutUint64(t.Data[8*i:], uint64(x))
	}
	return t
}

func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// F32 returns the data of an F32 tensor as []float32 sharing its memory. The
// data must be 4-byte aligned (everything hsdb allocates is; a mapped file
// whose tensor is not aligned is copied by the loader first). It panics if
// the dtype is not F32.
func (t *Tensor) F32() []float32 {
	if t.DType != F32 {
		panic(fmt.Sprintf("tensor.F32 on a %s tensor", t.DType))
	}
	if len(t.Data) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&t.Data[0])), len(t.Data)/4)
}

// U16 returns the data of a BF16 or F16 tensor as []uint16 bit patterns
// sharing its memory (2-byte aligned). It panics for other dtypes.
func (t *Tensor) U16() []uint16 {
	if t.DType != BF16 && t.DType != F16 {
		panic(fmt.Sprintf("tensor.U16 on a %s tensor", t.DType))
	}
	if len(t.Data) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&t.Data[0])), len(t.Data)/2)
}

// Aligned reports whether t's data can be viewed as its element type in
// place (its address is a multiple of the element size).
func (t *Tensor) Aligned() bool {
	if len(t.Data) == 0 {
		return true
	}
	return uintptr(unsafe.Pointer(&t.Data[0]))%uintptr(t.DType.Size()) == 0
}

// At returns element i (flat, row-major) widened to float64, for any dtype.
func (t *Tensor) At(i int) float64 {
	d := t.Data
	switch t.DType {
	case F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:])))
	case F64:
		return math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:]))
	case BF16:
		return float64(BF16ToF32(binary.LittleEndian.Uint16(d[2*i:])))
	case F16:
		return float64(F16ToF32(binary.LittleEndian.Uint16(d[2*i:])))
	case F8E4M3:
		return float64(FP8E4M3ToF32(d[i]))
	case I64:
		return float64(int64(binary.LittleEndian.Uint64(d[8*i:])))
	case I32:
		return float64(int32(binary.LittleEndian.Uint32(d[4*i:])))
	case I16:
		return float64(int16(binary.LittleEndian.Uint16(d[2*i:])))
	case I8:
		return float64(int8(d[i]))
	case U8, Bool:
		return float64(d[i])
	}
	panic(fmt.Sprintf("tensor.At on dtype %s", t.DType))
}

// Int returns element i of an integer tensor as int64 (floats are truncated).
func (t *Tensor) Int(i int) int64 {
	switch t.DType {
	case I64:
		return int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	case I32:
		return int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
	}
	return int64(t.At(i))
}

// ToF32 returns the elements widened to a new float32 slice (exact for
// bf16/f16/fp8; f64 and integers are rounded to the nearest float32). For an
// aligned F32 tensor it still copies, so the result is always the caller's.
func (t *Tensor) ToF32() []float32 {
	n := t.Numel()
	out := make([]float32, n)
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case F16:
		for i := range out {
			out[i] = F16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case F8E4M3:
		for i := range out {
			out[i] = fp8E4M3Table[t.Data[i]]
		}
	default:
		for i := range out {
			out[i] = float32(t.At(i))
		}
	}
	return out
}

// Convert returns a copy of t in dtype dt. Narrowing float conversions round
// to nearest even (as PyTorch's .to(dtype)); integer targets truncate.
func (t *Tensor) Convert(dt DType) *Tensor {
	out := New(dt, t.Shape...)
	n := t.Numel()
	switch dt {
	case F32:
		copy(out.F32(), t.ToF32())
	case BF16:
		v := t.ToF32()
		for i := range n {
			binary.LittleEndian.PutUint16(out.Data[2*i:], F32ToBF16(v[i]))
		}
	case F16:
		v := t.ToF32()
		for i := range n {
			binary.LittleEndian.PutUint16(out.Data[2*i:], F32ToF16(v[i]))
		}
	case F64:
		for i := range n {
			binary.LittleEndian.PutUint64(out.Data[8*i:], math.Float64bits(t.At(i)))
		}
	case F8E4M3:
		v := t.ToF32()
		for i := range n {
			out.Data[i] = F32ToFP8E4M3(v[i])
		}
	case I64:
		for i := range n {
			binary.LittleEndian.PutUint64(out.Data[8*i:], uint64(t.Int(i)))
		}
	case I32:
		for i := range n {
			binary.LittleEndian.PutUint32(out.Data[4*i:], uint32(int32(t.Int(i))))
		}
	default:
		panic(fmt.Sprintf("tensor.Convert to %s is not supported", dt))
	}
	return out
}

// Reshape returns a tensor sharing t's data with a new shape of the same
// element count; it panics otherwise.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	if Numel(shape) != t.Numel() {
		panic(fmt.Sprintf("tensor.Reshape %v -> %v changes the element count", t.Shape, shape))
	}
	return &Tensor{Shape: append([]int(nil), shape...), DType: t.DType, Data: t.Data}
}

// SliceRows returns rows [a, b) of the first dimension, sharing t's data.
func (t *Tensor) SliceRows(a, b int) *Tensor {
	if a < 0 || b > t.Rows() || a > b {
		panic(fmt.Sprintf("tensor.SliceRows [%d:%d) of %v", a, b, t.Shape))
	}
	rb := t.Cols() * t.DType.Size()
	shape := append([]int{b - a}, t.Shape[1:]...)
	if len(t.Shape) == 0 {
		shape = []int{b - a}
	}
	return &Tensor{Shape: shape, DType: t.DType, Data: t.Data[a*rb : b*rb]}
}

// ShapeString formats a shape as PyTorch-like "[771, 7168]". A shape of
// more than 16 dimensions (a hostile file's header may declare a million;
// each message that names it printed them all, 300 kB a line) shows its
// first 8 and last 4 and the count: "[1, 1, 1, 1, 1, 1, 1, 1, ..., 1, 1,
// 1, 1] (100000 dims)".
func ShapeString(shape []int) string {
	const most, head, tail = 16, 8, 4
	b := make([]byte, 0, 2+8*min(len(shape), most+1))
	b = append(b, '[')
	for i, d := range shape {
		if len(shape) > most && i >= head && i < len(shape)-tail {
			if i == head {
				b = append(b, ", ..."...)
			}
			continue
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	b = append(b, ']')
	if len(shape) > most {
		b = fmt.Appendf(b, " (%d dims)", len(shape))
	}
	return string(b)
}
