package tensor

import (
	"encoding/binary"
	"strings"
	"testing"
)

// int4Word packs eight signed 4-bit values as compressed-tensors does:
// value i stored as q+8 in bits [4i, 4i+4).
func int4Word(q [8]int) uint32 {
	var w uint32
	for i, v := range q {
		w |= uint32(v+8) << (4 * i)
	}
	return w
}

func TestQuantizedInt4Dequantize(t *testing.T) {
	// [2, 16] weight, group 8: row 0 columns 0..7 = -8..-1, 8..15 = 0..7;
	// row 1 all 7. Scales by hand: row 0 groups 0.5, 2; row 1 groups 1, -1.
	data := New(I32, 2, 2)
	words := []uint32{int4Word([8]int{-8, -7, -6, -5, -4, -3, -2, -1}), int4Word([8]int{0, 1, 2, 3, 4, 5, 6, 7}),
		int4Word([8]int{7, 7, 7, 7, 7, 7, 7, 7}), int4Word([8]int{7, 7, 7, 7, 7, 7, 7, 7})}
	for i, w := range words {
		binary.LittleEndian.PutUint32(data.Data[4*i:], w)
	}
	scale := FromF32([]float32{0.5, 2, 1, -1}, 2, 2).Convert(BF16)
	q := &Quantized{Format: QuantInt4Group, Shape: [2]int{2, 16}, Data: data, Scale: scale, Block: [2]int{1, 8}}
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	want := []float32{-4, -3.5, -3, -2.5, -2, -1.5, -1, -0.5, 0, 2, 4, 6, 8, 10, 12, 14,
		7, 7, 7, 7, 7, 7, 7, 7, -7, -7, -7, -7, -7, -7, -7, -7}
	got := q.Dequantize().F32()
	if len(got) != len(want) {
		t.Fatalf("len %d, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	c, err := q.SliceCols(8, 16)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Dequantize().F32(); g[0] != 0 || g[7] != 14 || g[8] != -7 {
		t.Fatalf("cols 8:16 = %v", g)
	}
	if _, err := q.SliceCols(4, 16); err == nil || !strings.Contains(err.Error(), "do not fall") {
		t.Fatalf("unaligned column slice: %v", err)
	}
}

func TestQuantizedFP8Dequantize(t *testing.T) {
	// [3, 3] fp8 weight with 2×2 blocks (partial edge blocks); fp8 0x38 is
	// 1.0 and 0x40 is 2.0 in e4m3 (bias 7): weight = value · block scale.
	data := New(F8E4M3, 3, 3)
	for i := range data.Data {
		data.Data[i] = 0x38
	}
	data.Data[4] = 0x40
	scale := FromF32([]float32{1, 3, 5, 7}, 2, 2)
	q := &Quantized{Format: QuantFP8Block, Shape: [2]int{3, 3}, Data: data, Scale: scale, Block: [2]int{2, 2}}
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 1, 3, 1, 2, 3, 5, 5, 7}
	got := q.Dequantize().F32()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	r, err := q.SliceRows(2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if g := r.Dequantize().F32(); g[0] != 5 || g[2] != 7 {
		t.Fatalf("rows 2:3 = %v", g)
	}
	bad := *q
	bad.Scale = FromF32([]float32{1, 2}, 1, 2)
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "want [2 2]") && !strings.Contains(err.Error(), "want [2, 2]") {
		t.Fatalf("wrong scale shape: %v", err)
	}
}
