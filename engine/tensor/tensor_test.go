package tensor

import (
	"math"
	"testing"
)

func TestBF16RoundNearestEven(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1.0 exact
		{0x3f808000, 0x3f80}, // halfway, lower mantissa even: stays
		{0x3f818000, 0x3f82}, // halfway, lower odd: rounds up to even
		{0x3f808001, 0x3f81}, // just above halfway
		{0x7f800000, 0x7f80}, // +Inf
		{0xff800000, 0xff80}, // -Inf
		{0x7f7fffff, 0x7f80}, // max float rounds to Inf, as torch does
	}
	for _, c := range cases {
		if got := F32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("F32ToBF16(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
	if v := BF16ToF32(F32ToBF16(float32(math.NaN()))); v == v {
		t.Errorf("NaN did not survive bf16")
	}
}

func TestFP8E4M3Values(t *testing.T) {
	// Values from the OCP FP8 spec table for E4M3.
	cases := map[uint8]float32{0x00: 0, 0x01: 1.0 / 512, 0x08: 1.0 / 64, 0x38: 1, 0x7e: 448, 0xfe: -448, 0x40: 2, 0x3c: 1.5}
	for b, want := range cases {
		if got := FP8E4M3ToF32(b); got != want {
			t.Errorf("FP8E4M3ToF32(%#x) = %v, want %v", b, got, want)
		}
	}
	if v := FP8E4M3ToF32(0x7f); v == v {
		t.Errorf("0x7f should be NaN")
	}
	for _, b := range []uint8{0x00, 0x01, 0x38, 0x3c, 0x7e, 0xfe, 0xb8} {
		if got := F32ToFP8E4M3(FP8E4M3ToF32(b)); got != b {
			t.Errorf("round trip %#x -> %#x", b, got)
		}
	}
	if got := F32ToFP8E4M3(1.0625); got != 0x38 { // halfway 1 and 1.125: ties to even code 0x38
		t.Errorf("F32ToFP8E4M3(1.0625) = %#x, want 0x38", got)
	}
	if got := F32ToFP8E4M3(500); got != 0x7f {
		t.Errorf("F32ToFP8E4M3(500) = %#x, want NaN 0x7f", got)
	}
}

func TestMoments(t *testing.T) {
	v := []float32{1, -3, 0, float32(math.NaN()), float32(math.Inf(1)), 2}
	m := MomentsF32(v)
	if m.Count != 6 || m.NaN != 1 || m.Inf != 1 || m.Zeros != 1 || m.Sum != 0 || m.SumSq != 14 || m.Min != -3 || m.Max != 2 || m.AbsMax != 3 {
		t.Fatalf("moments %+v", m)
	}
	a, b := MomentsF32(v[:3]), MomentsF32(v[3:])
	a.Merge(b)
	if a != m {
		t.Fatalf("merge %+v != %+v", a, m)
	}
}

func TestConvertRoundTrip(t *testing.T) {
	x := FromF32([]float32{1.5, -2.25, 3e-3, 65504}, 2, 2)
	for _, dt := range []DType{BF16, F16, F64} {
		y := x.Convert(dt).Convert(F32).F32()
		if len(y) != 4 {
			t.Fatalf("%s: %d values after the round trip, want 4", dt, len(y))
		}
		for i, want := range []float32{1.5, -2.25, 3e-3, 65504} {
			if d := math.Abs(float64(y[i]-want)) / math.Abs(float64(want)); !(d <= 4e-3) {
				t.Errorf("%s: element %d = %v, want %v", dt, i, y[i], want)
			}
		}
	}
}

// TestShapeStringClipsManyDims: a shape of more than 16 dimensions shows
// its first 8, its last 4 and the count; 16 or fewer show whole. A
// safetensors header of 100,000 unit dimensions made every line of
// `check` that named the tensor 300 kB long. Strings by hand.
func TestShapeStringClipsManyDims(t *testing.T) {
	many := make([]int, 100000)
	for i := range many {
		many[i] = i % 10
	}
	sixteen := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, c := range []struct {
		shape []int
		want  string
	}{
		{nil, "[]"},
		{[]int{771, 7168}, "[771, 7168]"},
		{sixteen, "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]"},
		{append(sixteen, 17), "[1, 2, 3, 4, 5, 6, 7, 8, ..., 14, 15, 16, 17] (17 dims)"},
		{many, "[0, 1, 2, 3, 4, 5, 6, 7, ..., 6, 7, 8, 9] (100000 dims)"},
	} {
		if got := ShapeString(c.shape); got != c.want {
			t.Errorf("ShapeString(%d dims) = %q, want %q", len(c.shape), got, c.want)
		}
	}
}
