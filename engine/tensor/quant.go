package tensor

import (
	"fmt"
	"slices"
)

// QuantFormat names how a Quantized weight stores its values.
type QuantFormat uint8

const (
	// QuantFP8Block is DeepSeek-V3's block-scaled fp8 (HF FineGrainedFP8,
	// DeepSeek-V3 inference/kernel.py weight_dequant): Data is F8E4M3
	// [out, in]; Scale is a float tensor [ceil(out/Block[0]),
	// ceil(in/Block[1])] (the checkpoint's `weight_scale_inv`); the weight is
	// f32(Data[i, j]) · Scale[i/Block[0], j/Block[1]].
	QuantFP8Block QuantFormat = iota + 1
	// QuantInt4Group is compressed-tensors' pack-quantized symmetric W4A16
	// (compressed_tensors/compressors/quantized_compressors/pack_quantized.py,
	// as Kimi-K2-Thinking and Kimi-K2.5 ship their routed experts): Data is
	// I32 [out, ceil(in/8)], eight consecutive input columns per word,
	// column 8w+i in bits [4i, 4i+4) stored as q+8 for q in [-8, 7]; Scale is
	// BF16 (or another float dtype) [out, ceil(in/Block[1])] with Block[0] =
	// 1; the weight is (((word >> 4i) & 0xF) − 8) · Scale[row, col/Block[1]].
	QuantInt4Group
)

// String returns "fp8_block" or "int4_group".
func (f QuantFormat) String() string {
	switch f {
	case QuantFP8Block:
		return "fp8_block"
	case QuantInt4Group:
		return "int4_group"
	}
	return fmt.Sprintf("quant(%d)", uint8(f))
}

// Quantized is a 2-D linear weight [out, in] kept in a quantized storage
// format (see QuantFormat for each format's layout, dtypes and source). It is
// what a loader hands a device that keeps weights quantized (the CUDA
// backend); the CPU backend dequantizes it on upload. Shape is the logical
// [out, in] of the dequantized weight.
type Quantized struct {
	Format QuantFormat // how Data and Scale encode the weight
	Shape  [2]int      // [out, in] of the dequantized weight
	Data   *Tensor     // the stored values: F8E4M3 [out, in], or I32 [out, ceil(in/8)] packed int4
	Scale  *Tensor     // float [ceil(out/Block[0]), ceil(in/Block[1])]
	Block  [2]int      // [rows, cols] of one scale's block; Int4: [1, group_size]
}

// MaxBlock is the largest scale block side (rows or columns) a Quantized
// weight may have: the CUDA dequantization kernels take block sizes as
// int32 (kernels/fp8.cu, kernels/int4.cu).
const MaxBlock = 1<<31 - 1

// Check returns an error unless Data and Scale have the dtypes and shapes the
// format requires for Shape and Block; the message names both shapes.
func (q *Quantized) Check() error {
	out, in := q.Shape[0], q.Shape[1]
	bh, bw := q.Block[0], q.Block[1]
	if out <= 0 || in <= 0 || bh <= 0 || bw <= 0 || q.Data == nil || q.Scale == nil {
		return fmt.Errorf("%s weight: shape %v, block %v: want positive sizes and both data and scale", q.Format, q.Shape, q.Block)
	}
	if bh > MaxBlock || bw > MaxBlock {
		return fmt.Errorf("%s weight: block %v: each size must be at most %d (device kernels index blocks in 32 bits)", q.Format, q.Block, MaxBlock)
	}
	if !q.Scale.DType.IsFloat() || q.Scale.DType == F8E4M3 {
		return fmt.Errorf("%s weight: scale dtype %s, want a float dtype", q.Format, q.Scale.DType)
	}
	var wantData []int
	var dt DType
	switch q.Format {
	case QuantFP8Block:
		wantData, dt = []int{out, in}, F8E4M3
	case QuantInt4Group:
		if bh != 1 {
			return fmt.Errorf("int4_group weight: block %v, want [1, group_size]", q.Block)
		}
		wantData, dt = []int{out, CeilDiv(in, 8)}, I32
	default:
		return fmt.Errorf("quantized weight: unknown format %d", q.Format)
	}
	wantScale := []int{CeilDiv(out, bh), CeilDiv(in, bw)}
	if q.Data.DType != dt || !slices.Equal(q.Data.Shape, wantData) {
		return fmt.Errorf("%s weight [%d, %d]: data is %s %s, want %s %s", q.Format, out, in, q.Data.DType, ShapeString(q.Data.Shape), dt, ShapeString(wantData))
	}
	if !slices.Equal(q.Scale.Shape, wantScale) {
		return fmt.Errorf("%s weight [%d, %d] with %d×%d blocks: scale is %s, want %s", q.Format, out, in, bh, bw, ShapeString(q.Scale.Shape), ShapeString(wantScale))
	}
	return nil
}

// Bytes returns the storage the weight occupies: data plus scales.
func (q *Quantized) Bytes() int64 { return int64(len(q.Data.Data) + len(q.Scale.Data)) }

// Dequantize returns the weight as a new F32 tensor [out, in], computed
// exactly as the format's reference does (one float32 multiply per element).
// q must pass Check.
func (q *Quantized) Dequantize() *Tensor {
	out, in := q.Shape[0], q.Shape[1]
	bh, bw := q.Block[0], q.Block[1]
	sc := q.Scale.Shape[1]
	sv := q.Scale.ToF32()
	res := New(F32, out, in)
	ov := res.F32()
	switch q.Format {
	case QuantFP8Block:
		for i := range out {
			srow := sv[(i/bh)*sc : (i/bh+1)*sc]
			for j := range in {
				ov[i*in+j] = FP8E4M3ToF32(q.Data.Data[i*in+j]) * srow[j/bw]
			}
		}
	case QuantInt4Group:
		words := q.Data.Shape[1]
		for i := range out {
			srow := sv[i*sc : (i+1)*sc]
			for j := range in {
				o := (i*words + j/8) * 4
				w := uint32(q.Data.Data[o]) | uint32(q.Data.Data[o+1])<<8 | uint32(q.Data.Data[o+2])<<16 | uint32(q.Data.Data[o+3])<<24
				v := int32((w>>(4*uint(j%8)))&0xF) - 8
				ov[i*in+j] = float32(v) * srow[j/bw]
			}
		}
	}
	return res
}

// SliceRows returns output rows [a, b) as a Quantized weight sharing no
// memory with q. a must be a multiple of Block[0] (so that the shard's
// blocks are whole blocks of the original); the error says which boundary
// does not align.
func (q *Quantized) SliceRows(a, b int) (*Quantized, error) {
	out := q.Shape[0]
	if a < 0 || b > out || a >= b {
		return nil, fmt.Errorf("%s weight [%d, %d]: rows %d:%d out of range", q.Format, out, q.Shape[1], a, b)
	}
	if !onBlocks(a, b, out, q.Block[0]) {
		return nil, fmt.Errorf("%s weight [%d, %d]: rows %d:%d do not fall on its %d-row scale blocks", q.Format, out, q.Shape[1], a, b, q.Block[0])
	}
	bh := q.Block[0]
	return &Quantized{Format: q.Format, Shape: [2]int{b - a, q.Shape[1]}, Block: q.Block,
		Data: copyRows(q.Data, a, b), Scale: copyRows(q.Scale, a/bh, CeilDiv(b, bh))}, nil
}

// SliceCols returns input columns [a, b) as a Quantized weight sharing no
// memory with q. a must be a multiple of Block[1] (and, for Int4, of 8, one
// packed word); the error says which boundary does not align.
func (q *Quantized) SliceCols(a, b int) (*Quantized, error) {
	in := q.Shape[1]
	if a < 0 || b > in || a >= b {
		return nil, fmt.Errorf("%s weight [%d, %d]: columns %d:%d out of range", q.Format, q.Shape[0], in, a, b)
	}
	bw := q.Block[1]
	unit := q.Format.colUnit(bw)
	if !onBlocks(a, b, in, unit) {
		return nil, fmt.Errorf("%s weight [%d, %d]: columns %d:%d do not fall on its %d-column blocks", q.Format, q.Shape[0], in, a, b, unit)
	}
	r := &Quantized{Format: q.Format, Shape: [2]int{q.Shape[0], b - a}, Block: q.Block}
	switch q.Format {
	case QuantFP8Block:
		r.Data = copyCols(q.Data, a, b)
	case QuantInt4Group:
		r.Data = copyCols(q.Data, a/8, CeilDiv(b, 8))
	}
	r.Scale = copyCols(q.Scale, a/bw, CeilDiv(b, bw))
	return r, nil
}

// ShardOnBlocks reports whether rows [rows[0], rows[1]) and columns
// [cols[0], cols[1]) of a weight [out, in] stored in format f with scale
// blocks block ([rows, cols]; int4: [1, group_size]) fall on whole blocks,
// so that SliceRows and SliceCols cut them out quantized: each range starts
// on a block boundary and ends on one or at the weight's edge (int4
// columns on a boundary of the group and of the 8-column packed word). A
// loader dequantizes a shard that does not, and keeps it dense
// (model.Loader.Linear); the memory plan counts it so (engine/plan).
func ShardOnBlocks(f QuantFormat, block [2]int, out, in int, rows, cols [2]int) bool {
	if block[0] <= 0 || block[1] <= 0 {
		return false
	}
	return onBlocks(rows[0], rows[1], out, block[0]) && onBlocks(cols[0], cols[1], in, f.colUnit(block[1]))
}

// onBlocks reports whether [a, b) of a dimension of n starts on a multiple
// of unit and ends on one or at n.
func onBlocks(a, b, n, unit int) bool { return a%unit == 0 && (b%unit == 0 || b == n) }

// colUnit is the column granularity a shard of format f with bw-column
// scale blocks must keep: bw, and for int4 a whole packed int32 word of 8
// columns too.
func (f QuantFormat) colUnit(bw int) int {
	if f == QuantInt4Group {
		return lcm(bw, 8)
	}
	return bw
}

// CeilDiv returns ⌈n/d⌉ for n ≥ 0 and d > 0 without the overflow of
// (n+d-1)/d: a block size from config.json (weight_block_size, group_size)
// may be as large as an int holds, where n+d-1 wraps negative and the
// "number of blocks" becomes 0 — a scale of zero rows would then pass Check
// and Dequantize index past it.
func CeilDiv(n, d int) int {
	if n <= 0 {
		return 0
	}
	return (n-1)/d + 1
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// copyRows returns rows [a, b) of 2-D t as a new tensor.
func copyRows(t *Tensor, a, b int) *Tensor {
	out := New(t.DType, b-a, t.Shape[1])
	rb := t.Shape[1] * t.DType.Size()
	copy(out.Data, t.Data[a*rb:b*rb])
	return out
}

// copyCols returns columns [a, b) of 2-D t as a new tensor.
func copyCols(t *Tensor, a, b int) *Tensor {
	rows, cols, es := t.Shape[0], t.Shape[1], t.DType.Size()
	out := New(t.DType, rows, b-a)
	for r := range rows {
		copy(out.Data[r*(b-a)*es:(r+1)*(b-a)*es], t.Data[(r*cols+a)*es:(r*cols+b)*es])
	}
	return out
}
