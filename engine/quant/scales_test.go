package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// scaleTensor returns a [2, 3] scale grid of dtype dt, all 1.0 but element
// [1, 2] which holds bits (a NaN or an infinity of that dtype, by hand:
// exponent all ones).
func scaleTensor(dt tensor.DType, bits uint64) *tensor.Tensor {
	t := tensor.FromF32([]float32{1, 1, 1, 1, 1, 1}, 2, 3).Convert(dt)
	es := dt.Size()
	putBits(t.Data[5*es:6*es], bits)
	return t
}

// putBits writes the low len(b) bytes of bits into b, little-endian (an
// element of 2, 4 or 8 bytes).
func putBits(b []byte, bits uint64) {
	switch len(b) {
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(bits))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(bits))
	case 8:
		binary.LittleEndian.PutUint64(b, bits)
	}
}

// TestNonFiniteScalesRefused: a block scale that is NaN or ±Inf, in every
// float dtype a checkpoint may store scales in, makes the fp8 and the int4
// scheme refuse the weight naming the scale tensor and the element [1, 2];
// before, it loaded and turned every output of the weight's rows into NaN
// (one scale covers a whole block). Finite scales (0, negative, the largest
// f16) still load; TestOverflowingScalesRefused has the largest.
func TestNonFiniteScalesRefused(t *testing.T) {
	bad := []struct {
		dt   tensor.DType
		bits uint64
		what string
	}{
		{tensor.BF16, 0x7FC0, "NaN"}, {tensor.BF16, 0xFF80, "-Inf"}, {tensor.F16, 0x7C00, "+Inf"}, {tensor.F16, 0x7E00, "NaN"},
		{tensor.F32, uint64(math.Float32bits(float32(math.Inf(1)))), "+Inf"}, {tensor.F32, 0x7FC00001, "NaN"},
		{tensor.F64, math.Float64bits(math.NaN()), "NaN"}, {tensor.F64, math.Float64bits(math.Inf(-1)), "-Inf"},
	}
	good := []struct {
		dt   tensor.DType
		bits uint64
	}{{tensor.BF16, 0x0000}, {tensor.BF16, 0xBF80}, {tensor.F16, 0x7BFF}, {tensor.F32, uint64(math.Float32bits(-2))}}

	// fp8: a 3×5 weight in 2×2 blocks has a [2, 3] scale grid.
	fp8 := &FP8Block{Block: [2]int{2, 2}}
	// int4: a 2×96 weight in groups of 32 has a [2, 3] scale grid.
	int4 := mustParse(t, kimiQuantConfig)
	const expert = "model.layers.3.mlp.experts.7.gate_proj"
	load := func(sc *tensor.Tensor) (error, error) {
		fsrc := &model.MapSource{Name: "fp8", Tensors: map[string]*tensor.Tensor{
			"m.weight": {DType: tensor.F8E4M3, Shape: []int{3, 5}, Data: make([]byte, 15)}, "m.weight_scale_inv": sc}}
		_, errF := fp8.Load(fsrc, "m.weight", 3, 5)
		shape := tensor.New(tensor.I32, 2)
		binary.LittleEndian.PutUint32(shape.Data, 2)
		binary.LittleEndian.PutUint32(shape.Data[4:], 96)
		isrc := &model.MapSource{Name: "int4", Tensors: map[string]*tensor.Tensor{
			expert + ".weight_packed": tensor.New(tensor.I32, 2, 12), expert + ".weight_scale": sc, expert + ".weight_shape": shape}}
		_, errI := int4.Load(isrc, expert+".weight", 2, 96)
		return errF, errI
	}
	for _, c := range bad {
		errF, errI := load(scaleTensor(c.dt, c.bits))
		for _, x := range []struct {
			err   error
			scale string
		}{{errF, "m.weight_scale_inv"}, {errI, expert + ".weight_scale"}} {
			if x.err == nil || !strings.Contains(x.err.Error(), x.scale) || !strings.Contains(x.err.Error(), "at [1, 2]") || !strings.Contains(x.err.Error(), c.what) {
				t.Errorf("%s scale with %s at [1, 2]: %v; want an error naming %s, %s and [1, 2]", c.dt, c.what, x.err, x.scale, c.what)
			}
		}
	}
	for _, c := range good {
		if errF, errI := load(scaleTensor(c.dt, c.bits)); errF != nil || errI != nil {
			t.Errorf("%s scale with bits %#x: %v / %v; want it loaded", c.dt, c.bits, errF, errI)
		}
	}
}

// TestCheckScalesEveryPosition: a single NaN at each position of a [4, 9]
// grid (whole 8-byte words and a partial last word, for every dtype) is
// found at exactly that [row, col]; the grid without it passes.
func TestCheckScalesEveryPosition(t *testing.T) {
	nan := map[tensor.DType]uint64{tensor.BF16: 0x7FC1, tensor.F16: 0xFE01, tensor.F32: 0xFF800000, tensor.F64: 0x7FF8000000000001}
	for dt, bits := range nan {
		base := tensor.FromF32(make([]float32, 36), 4, 9).Convert(dt)
		if err := checkScales("s", base, fp8Max, "fp8 e4m3 values reach ±448"); err != nil {
			t.Fatalf("%s zeros: %v", dt, err)
		}
		es := dt.Size()
		for i := range 36 {
			g := &tensor.Tensor{Shape: []int{4, 9}, DType: dt, Data: append([]byte(nil), base.Data...)}
			putBits(g.Data[i*es:(i+1)*es], bits)
			want := fmt.Sprintf("at [%d, %d]", i/9, i%9)
			if err := checkScales("s", g, fp8Max, "fp8 e4m3 values reach ±448"); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s, non-finite element %d: %v; want %s", dt, i, err, want)
			}
		}
	}
}
