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

// loadWithScale loads a 3×5 fp8 weight in 2×2 blocks and a 2×96 int4
// expert in groups of 32 (both a [2, 3] scale grid) with scale sc, and
// returns the two errors and the int4 expert's name.
func loadWithScale(t *testing.T, sc *tensor.Tensor) (errF, errI error, expert string) {
	t.Helper()
	fp8 := &FP8Block{Block: [2]int{2, 2}}
	int4 := mustParse(t, kimiQuantConfig)
	expert = "model.layers.3.mlp.experts.7.gate_proj"
	fsrc := &model.MapSource{Name: "fp8", Tensors: map[string]*tensor.Tensor{
		"m.weight": {DType: tensor.F8E4M3, Shape: []int{3, 5}, Data: make([]byte, 15)}, "m.weight_scale_inv": sc}}
	_, errF = fp8.Load(fsrc, "m.weight", 3, 5)
	shape := tensor.New(tensor.I32, 2)
	binary.LittleEndian.PutUint32(shape.Data, 2)
	binary.LittleEndian.PutUint32(shape.Data[4:], 96)
	isrc := &model.MapSource{Name: "int4", Tensors: map[string]*tensor.Tensor{
		expert + ".weight_packed": tensor.New(tensor.I32, 2, 12), expert + ".weight_scale": sc, expert + ".weight_shape": shape}}
	_, errI = int4.Load(isrc, expert+".weight", 2, 96)
	return errF, errI, expert
}

// TestOverflowingScalesRefused: a block scale that is finite but so large
// that the block's weights dequantize to ±Inf (the scale widened to
// float32 times an fp8 e4m3 value of 448, or an int4 value of -8) loaded,
// and every output of the weight's rows was Inf or NaN (a bf16 scale of
// 0x7F7F in a Kimi expert made model.norm's input all NaN); now the weight
// is refused naming the scale tensor and [1, 2], as a NaN scale is. The
// boundaries, by hand (float32's largest is (2−2⁻²³)·2¹²⁷, and a product
// at or past 2¹²⁸ − 2¹⁰³ rounds to Inf):
//   - int4, ×8: bf16 0x7DFF = 1.9921875·2¹²⁴ gives 1.9921875·2¹²⁷ (loads);
//     0x7E00 = 2¹²⁵ gives 2¹²⁸ (refused). f32 0x7DFFFFFF = (2−2⁻²³)·2¹²⁴
//     gives float32's largest exactly (loads); 0x7E000000 = 2¹²⁵ does not.
//     f64 1e300 is finite but Inf as float32 (refused).
//   - fp8, ×448 = 1.75·2⁸: bf16 0x7B12 = 1.140625·2¹¹⁹ gives
//     1.99609375·2¹²⁷ (loads); 0x7B13 = 1.1484375·2¹¹⁹ gives
//     2.009765625·2¹²⁷ (refused). f32 2¹¹⁹ gives 1.75·2¹²⁷ (loads), 2¹²⁰
//     1.75·2¹²⁸ (refused).
//   - f16's largest, 65504, times 448 is finite: it loads under both.
func TestOverflowingScalesRefused(t *testing.T) {
	f32 := func(f float32) uint64 { return uint64(math.Float32bits(f)) }
	cases := []struct {
		dt           tensor.DType
		bits         uint64
		fp8OK, intOK bool
	}{
		{tensor.BF16, 0x7DFF, false, true},
		{tensor.BF16, 0x7E00, false, false},
		{tensor.BF16, 0xFE00, false, false}, // −2¹²⁵
		{tensor.BF16, 0x7B12, true, true},
		{tensor.BF16, 0x7B13, false, true},
		{tensor.BF16, 0xFB13, false, true},
		{tensor.F32, 0x7DFFFFFF, false, true},
		{tensor.F32, 0x7E000000, false, false},
		{tensor.F32, f32(float32(math.Ldexp(1, 119))), true, true},
		{tensor.F32, f32(float32(math.Ldexp(1, 120))), false, true},
		{tensor.F32, f32(float32(-math.Ldexp(1, 120))), false, true},
		{tensor.F64, math.Float64bits(float64(math.Float32frombits(0x7DFFFFFF))), false, true},
		{tensor.F64, math.Float64bits(math.Ldexp(1, 125)), false, false},
		{tensor.F64, math.Float64bits(1e300), false, false},
		{tensor.F16, 0x7BFF, true, true},
		{tensor.F16, 0xFBFF, true, true},
	}
	for _, c := range cases {
		errF, errI, expert := loadWithScale(t, scaleTensor(c.dt, c.bits))
		for _, x := range []struct {
			err   error
			ok    bool
			scale string
		}{{errF, c.fp8OK, "m.weight_scale_inv"}, {errI, c.intOK, expert + ".weight_scale"}} {
			switch {
			case x.ok && x.err != nil:
				t.Errorf("%s scale %#x in %s: %v; want it loaded", c.dt, c.bits, x.scale, x.err)
			case !x.ok && (x.err == nil || !strings.Contains(x.err.Error(), x.scale) || !strings.Contains(x.err.Error(), "at [1, 2]") ||
				!strings.Contains(x.err.Error(), "is not finite in float32")):
				t.Errorf("%s scale %#x in %s: %v; want an error naming it, [1, 2] and the overflow", c.dt, c.bits, x.scale, x.err)
			}
		}
	}
}

// TestCheckScalesOverflowEveryPosition: one overflowing scale (int4's
// bound: 2¹²⁵, either sign) at each position of a [4, 9] grid of ones,
// through whole 8-byte words and a partial last one in bf16, f32 and f64,
// is found at exactly that [row, col].
func TestCheckScalesOverflowEveryPosition(t *testing.T) {
	big := map[tensor.DType][]uint64{
		tensor.BF16: {0x7E00, 0xFE00},
		tensor.F32:  {0x7E000000, 0xFE000000},
		tensor.F64:  {math.Float64bits(math.Ldexp(1, 125)), math.Float64bits(-math.Ldexp(1, 125))},
	}
	for dt, all := range big {
		ones := make([]float32, 36)
		for i := range ones {
			ones[i] = 1
		}
		base := tensor.FromF32(ones, 4, 9).Convert(dt)
		if err := checkScales("s", base, int4Max, "int4 values reach -8"); err != nil {
			t.Fatalf("%s ones: %v", dt, err)
		}
		es := dt.Size()
		for _, bits := range all {
			for i := range 36 {
				g := &tensor.Tensor{Shape: []int{4, 9}, DType: dt, Data: append([]byte(nil), base.Data...)}
				putBits(g.Data[i*es:(i+1)*es], bits)
				want := fmt.Sprintf("at [%d, %d]", i/9, i%9)
				if err := checkScales("s", g, int4Max, "int4 values reach -8"); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s %#x at element %d: %v; want %s", dt, bits, i, err, want)
				}
			}
		}
	}
}
