package model

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"hsdb/engine/backend/cpu"
	"hsdb/engine/tensor"
)

// oneQuant is a QuantScheme that stores "a.weight" as q.
type oneQuant struct{ q *tensor.Quantized }

func (s oneQuant) String() string { return "test" }
func (s oneQuant) Load(src WeightSource, name string, out, in int) (*tensor.Quantized, error) {
	return s.q, nil
}
func (s oneQuant) Check(src WeightSource, name string, out, in int) error { return nil }
func (s oneQuant) Stored(src WeightSource, name string) []string          { return nil }
func (s oneQuant) Planned(name string, out, in int) (int64, bool)         { return 0, false }
func (s oneQuant) Layout(name string) QuantLayout                         { return QuantLayout{} }

// TestNarrowedWeightOverflow: a finite weight beyond the range of the dtype
// it loads as (--dtype f16 or bf16; f32 for a stored f64) was converted to
// ±Inf without a word, and every output it touched was Inf or NaN (a
// q_a_layernorm weight of 1e6 at --dtype f16 made model.norm's input all
// NaN; an fp8 block scale of 1e4 the same). Now the load fails naming the
// tensor, the element and its value. By hand: f16's largest is 65504 and
// 65520, the midpoint to 65536, rounds to even, Inf; 65519 rounds down.
// fp8 e4m3 0x38 is 1 and 0x7E is 448, so a block scale of 200 makes 200
// and 89600; int4 nibble 0 is -8, times a bf16 scale of 16384 is -131072.
func TestNarrowedWeightOverflow(t *testing.T) {
	dense := func(dt tensor.DType, vals ...float64) *tensor.Tensor {
		x := tensor.New(dt, 2, 3)
		for i, v := range vals {
			switch dt {
			case tensor.F64:
				binary.LittleEndian.PutUint64(x.Data[8*i:], math.Float64bits(v))
			case tensor.F32:
				binary.LittleEndian.PutUint32(x.Data[4*i:], math.Float32bits(float32(v)))
			case tensor.BF16:
				binary.LittleEndian.PutUint16(x.Data[2*i:], tensor.F32ToBF16(float32(v)))
			}
		}
		return x
	}
	load := func(x *tensor.Tensor, q *tensor.Quantized, dt tensor.DType) error {
		src := &MapSource{Name: "m", Tensors: map[string]*tensor.Tensor{"a.weight": x}}
		l := NewLoader(src, cpu.New(0), 0, 1, dt)
		if q != nil {
			l.Quant = oneQuant{q}
			l.Report = &LoadReport{}
			l.Linear("a.weight", q.Shape[0], q.Shape[1], [2]int{0, q.Shape[0]}, [2]int{0, q.Shape[1]})
		} else {
			l.Full("a.weight", 2, 3)
		}
		return l.Err()
	}
	if tensor.FP8E4M3ToF32(0x38) != 1 || tensor.FP8E4M3ToF32(0x7E) != 448 {
		t.Fatalf("fp8 0x38, 0x7E are %v, %v; want 1, 448", tensor.FP8E4M3ToF32(0x38), tensor.FP8E4M3ToF32(0x7E))
	}
	fp8 := func(last byte) *tensor.Quantized {
		sc := tensor.FromF32([]float32{200}, 1, 1)
		return &tensor.Quantized{Format: tensor.QuantFP8Block, Shape: [2]int{2, 2}, Block: [2]int{2, 2},
			Data: &tensor.Tensor{DType: tensor.F8E4M3, Shape: []int{2, 2}, Data: []byte{0x38, 0x38, 0x38, last}}, Scale: sc}
	}
	packed := tensor.New(tensor.I32, 1, 1)
	binary.LittleEndian.PutUint32(packed.Data, 0x88888880) // q: -8, then 0 ×7
	int4 := &tensor.Quantized{Format: tensor.QuantInt4Group, Shape: [2]int{1, 8}, Block: [2]int{1, 8},
		Data: packed, Scale: tensor.FromF32([]float32{16384}, 1, 1).Convert(tensor.BF16)}
	for _, c := range []struct {
		name string
		x    *tensor.Tensor
		q    *tensor.Quantized
		dt   tensor.DType
		want []string // nil: loads
	}{
		{"f32 70000 as f16", dense(tensor.F32, 1, 2, 70000, 4, 5, 6), nil, tensor.F16, []string{"a.weight", "[0, 2]", "70000", "f16"}},
		{"f32 65520 as f16", dense(tensor.F32, 1, 2, 3, 4, 5, -65520), nil, tensor.F16, []string{"a.weight", "[1, 2]", "-65520", "f16"}},
		{"f32 65519 as f16", dense(tensor.F32, 1, 2, 3, 4, 5, -65519), nil, tensor.F16, nil},
		{"f32 70000 as bf16", dense(tensor.F32, 1, 2, 70000, 4, 5, 6), nil, tensor.BF16, nil},
		{"f32 +Inf as f16", dense(tensor.F32, 1, math.Inf(1), 3, 4, 5, 6), nil, tensor.F16, nil},
		{"bf16 3e38 as f16", dense(tensor.BF16, 1, 2, 3, 3e38, 5, 6), nil, tensor.F16, []string{"a.weight", "[1, 0]", "f16"}},
		{"f64 1e300 as stored", dense(tensor.F64, 1, 2, 3, 4, 1e300, 6), nil, tensor.Invalid, []string{"a.weight", "[1, 1]", "1e+300", "f32"}},
		{"fp8 89600 as f16", nil, fp8(0x7E), tensor.F16, []string{"a.weight", "[1, 1]", "89600", "f16"}},
		{"fp8 89600 as bf16", nil, fp8(0x7E), tensor.BF16, nil},
		{"fp8 200 as f16", nil, fp8(0x38), tensor.F16, nil},
		{"int4 -131072 as f16", nil, int4, tensor.F16, []string{"a.weight", "[0, 0]", "-131072", "f16"}},
		{"int4 -131072 as f32", nil, int4, tensor.F32, nil},
	} {
		x := c.x
		if x == nil {
			x = tensor.New(tensor.F32, 1, 1)
		}
		err := load(x, c.q, c.dt)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v; want it loaded", c.name, err)
			}
			continue
		}
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want an error with %q", c.name, err, w)
				break
			}
		}
	}
}

// TestMaxAbs: the largest magnitude from raw bits, by hand, in each dtype:
// -3 beats 2, 0.5 and -0 (bf16, f16, f32, f64).
func TestMaxAbs(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.BF16, tensor.F16, tensor.F32, tensor.F64} {
		x := tensor.FromF32([]float32{2, 0.5, -3, float32(math.Copysign(0, -1))}, 2, 2).Convert(dt)
		if got := maxAbs(x); got != 3 {
			t.Errorf("%s: maxAbs %v, want 3", dt, got)
		}
	}
}
